// A minimal client of V8's inspector protocol (as workerd serves it): connect, then
// `call(method, params)` and await the result.
import WebSocket from "ws";

export async function connect(url) {
  const ws = new WebSocket(url);
  await new Promise((ok, fail) => {
    ws.once("open", ok);
    ws.once("error", fail);
  });
  let next = 0;
  const pending = new Map();
  ws.on("message", (data) => {
    const msg = JSON.parse(data);
    if (msg.id !== undefined && pending.has(msg.id)) {
      pending.get(msg.id)(msg);
      pending.delete(msg.id);
    }
  });
  const call = (method, params = {}) =>
    new Promise((ok, fail) => {
      const id = ++next;
      pending.set(id, (msg) => (msg.error ? fail(new Error(`${method}: ${msg.error.message}`)) : ok(msg.result)));
      ws.send(JSON.stringify({ id, method, params }));
    });
  return { call, close: () => ws.close() };
}
