// Hop's dashboard: small conveniences on top of pages that work without this file.
"use strict";

// Copy buttons: shown only where the browser can copy (a secure context).
function showCopyButtons(root) {
  if (!navigator.clipboard) return;
  for (const button of root.querySelectorAll("button.copy")) button.hidden = false;
}

document.addEventListener("click", (event) => {
  const button = event.target.closest("button.copy");
  if (!button) return;
  navigator.clipboard.writeText(button.dataset.copy).then(() => {
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = "Copy"; }, 1500);
  });
});

// Bulk selection: a box that selects every row.
document.addEventListener("change", (event) => {
  if (!event.target.matches("input.select-all")) return;
  for (const box of document.querySelectorAll("input[name=select]")) box.checked = event.target.checked;
});

document.addEventListener("DOMContentLoaded", () => showCopyButtons(document));
document.addEventListener("htmx:afterSwap", (event) => showCopyButtons(event.target));
