//! Tasks: one agent's work on a copy of a folder.

use std::collections::BTreeMap;
use std::fmt;

/// The most files one task may touch before it asks.
pub const MAX_FILES: usize = 10_000;

static GREETING: &str = "hello";

/// A task's state on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    Running,
    Committed { at: u64 },
    Discarded,
}

/// One task.
#[derive(Debug)]
pub struct Task<S: Store> {
    id: String,
    state: State,
    store: S,
}

pub type TaskMap<S> = BTreeMap<String, Task<S>>;

/// Where tasks keep their files.
pub trait Store {
    /// Reads a file.
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>>;

    fn exists(&self, path: &str) -> bool {
        self.read(path).is_ok()
    }
}

impl<S: Store> Task<S> {
    /// Makes a task.
    pub fn new(id: impl Into<String>, store: S) -> Self {
        Self { id: id.into(), state: State::Running, store }
    }

    /// Applies the task's effects to the folder.
    #[must_use]
    pub fn commit(&mut self, at: u64) -> Result<(), Error> {
        if self.state != State::Running {
            return Err(Error::NotRunning);
        }
        self.state = State::Committed { at };
        Ok(())
    }

    pub const KIND: &'static str = "task";
}

impl<S: Store> fmt::Display for Task<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task {}", self.id)
    }
}

impl<S: Store> fmt::Debug for Wrapper<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("wrapper")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("task is not running")]
    NotRunning,
}

macro_rules! ensure {
    ($cond:expr, $err:expr) => {
        if !$cond {
            return Err($err);
        }
    };
}

pub fn open<S: Store>(store: S, id: &str) -> Task<S>
where
    S: Clone,
{
    Task::new(id, store)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Mem;

    impl Store for Mem {
        fn read(&self, _path: &str) -> std::io::Result<Vec<u8>> {
            Ok(vec![])
        }
    }

    #[test]
    fn commit_twice_fails() {
        let mut t = Task::new("a", Mem);
        assert!(t.commit(1).is_ok());
        assert!(t.commit(2).is_err());
    }
}
