//! A deadline that costs nothing to a future ready at once.

/// `fut` with a deadline of `limit`, whose timer is armed only if `fut` cannot finish
/// at once: a redirect served from memory completes on its first poll and pays for no
/// timer; one that waits on the database is cut off at the deadline.
pub async fn within<F: std::future::Future>(
    limit: std::time::Duration,
    fut: F,
) -> Result<F::Output, tokio::time::error::Elapsed> {
    use std::task::Poll;
    let mut fut = std::pin::pin!(fut);
    let first = std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await;
    match first {
        Poll::Ready(done) => Ok(done),
        // Boxed: a timer is most of a kilobyte, which every visit's future would
        // otherwise carry (and hyper copy) to serve only the ones that wait.
        Poll::Pending => Box::pin(tokio::time::timeout(limit, fut)).await,
    }
}
