//! Work run on the libuv thread pool, its outcome a Promise: the `Async`
//! forms of the calls, which leave the event loop free while a build,
//! count or store runs.

use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Task};

use crate::errors::{Result, caught, internal};
use crate::outcome::Outcome;

type Work = Box<dyn FnOnce() -> Result<Outcome> + Send>;

/// One call's work, done once on a pool thread.
pub struct Job {
    work: Option<Work>,
}

/// The Promise of `work`'s outcome, computed off the event loop; an error
/// or a panic in it rejects the Promise with the binding's error.
pub fn spawn(work: impl FnOnce() -> Result<Outcome> + Send + 'static) -> AsyncTask<Job> {
    AsyncTask::new(Job {
        work: Some(Box::new(work)),
    })
}

impl Task for Job {
    type Output = Outcome;
    type JsValue = Outcome;

    fn compute(&mut self) -> Result<Outcome> {
        match self.work.take() {
            Some(work) => caught(work),
            None => Err(internal("a task ran twice")),
        }
    }

    fn resolve(&mut self, _env: Env, output: Outcome) -> Result<Outcome> {
        Ok(output)
    }
}
