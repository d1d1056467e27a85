//! The cap on requests in flight (`--max-in-flight`): past it, a request is answered
//! 503 at once rather than queued, so a flood builds no backlog that later visitors
//! wait behind.
//!
//! A counter rather than a semaphore: nothing here ever waits for a slot, and tower's
//! global concurrency limit returned each permit under its semaphore's waiter-list
//! mutex, the last lock every redirect took once the redirect cache had a front per
//! thread (`docs/benchmarks/history/redirect.md`).

use axum::extract::Request;
use axum::response::Response;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

/// Counts every request of the services it wraps against one cap.
#[derive(Debug, Clone)]
pub struct InFlightLayer {
    count: Arc<AtomicUsize>,
    max: usize,
}

impl InFlightLayer {
    /// At most `max` requests at once (at least one).
    pub fn new(max: usize) -> Self {
        InFlightLayer {
            count: Arc::default(),
            max: max.max(1),
        }
    }

    /// A slot under the cap, or `None` when every slot is taken: for a path that
    /// answers without a tower service (the origin's visits, [`crate::routes::Origin`]).
    pub fn enter(&self) -> Option<Slot> {
        enter(&self.count, self.max)
    }
}

fn enter(count: &Arc<AtomicUsize>, max: usize) -> Option<Slot> {
    if count.fetch_add(1, Ordering::AcqRel) >= max {
        count.fetch_sub(1, Ordering::AcqRel);
        return None;
    }
    Some(Slot(count.clone()))
}

impl<S> tower::Layer<S> for InFlightLayer {
    type Service = InFlight<S>;
    fn layer(&self, inner: S) -> InFlight<S> {
        InFlight {
            inner,
            count: self.count.clone(),
            max: self.max,
        }
    }
}

/// A service under the cap.
#[derive(Debug, Clone)]
pub struct InFlight<S> {
    inner: S,
    count: Arc<AtomicUsize>,
    max: usize,
}

/// A request's place under the cap, given back when its response is ready (or the
/// request is dropped).
#[derive(Debug)]
pub struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl<S> tower::Service<Request> for InFlight<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Counted<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        match enter(&self.count, self.max) {
            None => Counted {
                inner: None,
                slot: None,
            },
            slot => Counted {
                inner: Some(self.inner.call(req)),
                slot,
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// The inner response while it holds its slot; `inner: None` is the busy answer.
    pub struct Counted<F> {
        #[pin]
        inner: Option<F>,
        slot: Option<Slot>,
    }
}

impl<F: Future<Output = Result<Response, Infallible>>> Future for Counted<F> {
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        match this.inner.as_pin_mut() {
            None => Poll::Ready(Ok(crate::server::busy())),
            Some(inner) => {
                let res = std::task::ready!(inner.poll(cx));
                this.slot.take();
                Poll::Ready(res)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::StatusCode;
    use tower::{Layer, Service};

    fn poll_once<F: Future>(f: Pin<&mut F>) -> Poll<F::Output> {
        f.poll(&mut Context::from_waker(std::task::Waker::noop()))
    }

    fn request() -> Request {
        Request::new(Body::empty())
    }

    #[test]
    fn past_the_cap_the_answer_is_busy_and_a_slot_comes_back_however_its_request_ends() {
        // Each response waits until its gate opens.
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let inner = {
            let gate = gate.clone();
            tower::service_fn(move |_: Request| {
                let gate = gate.clone();
                async move {
                    let _open = gate.acquire().await;
                    Ok::<_, Infallible>(Response::new(Body::empty()))
                }
            })
        };
        let mut svc = InFlightLayer::new(1).layer(inner);
        let mut first = Box::pin(svc.call(request()));
        assert!(poll_once(first.as_mut()).is_pending(), "within the cap");
        let mut second = Box::pin(svc.call(request()));
        match poll_once(second.as_mut()) {
            Poll::Ready(Ok(res)) => assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE),
            other => panic!("past the cap: {:?}", other.map(|r| r.map(|r| r.status()))),
        }
        // A request dropped before its answer (the visitor went away) frees its slot.
        drop(first);
        let mut third = Box::pin(svc.call(request()));
        assert!(poll_once(third.as_mut()).is_pending(), "the slot came back");
        // So does one answered.
        gate.add_permits(1);
        match poll_once(third.as_mut()) {
            Poll::Ready(Ok(res)) => assert_eq!(res.status(), StatusCode::OK),
            other => panic!("answered: {:?}", other.map(|r| r.map(|r| r.status()))),
        }
        let mut fourth = Box::pin(svc.call(request()));
        gate.add_permits(1);
        assert!(
            matches!(poll_once(fourth.as_mut()), Poll::Ready(Ok(res)) if res.status() == StatusCode::OK)
        );
    }
}
