//! `hop-origin outbox …`: the rows the edge refused, listed and put back in line,
//! through the outbox service.

use crate::config::OutboxCommand;
use crate::error::AppError;
use crate::model::time::rfc3339;
use crate::outbox::{Outbox, MAX_FAILED_PAGE};
use crate::principal::Principal;

/// Runs one `outbox` command as the operator.
pub async fn run(outbox: &Outbox, command: OutboxCommand) -> Result<(), AppError> {
    let operator = Principal::Operator;
    match command {
        OutboxCommand::Failed => {
            let mut after = 0;
            loop {
                let page = outbox.failed(&operator, after, MAX_FAILED_PAGE).await?;
                for r in &page.rows {
                    println!(
                        "{}\t{}\t{} v{}\t{} attempts\tfailed {}\t{}",
                        r.seq,
                        r.lane,
                        r.route_key,
                        r.version,
                        r.attempts,
                        rfc3339(r.failed_at),
                        r.last_error
                    );
                }
                match page.next_after {
                    Some(next) => after = next,
                    None => break,
                }
            }
        }
        OutboxCommand::Retry { seq, all: _ } => {
            let n = outbox.retry(&operator, seq).await?;
            if n == 0 {
                return Err(AppError::BadRequest(match seq {
                    Some(seq) => format!("no row {seq} is set aside as failed"),
                    None => "no row is set aside as failed".to_owned(),
                }));
            }
            println!("{n} row(s) back in line; the publisher pushes them again");
        }
    }
    Ok(())
}
