use std::fmt;

/// One task.
pub struct Task {
    id: String,
    done: bool,
}

impl Task {
    pub fn new(id: &str) -> Self {
        Task { id: id.to_string(), done: false }
    }

    /// Applies the task.
    pub fn commit(&mut self) -> Result<(), String> {
        if self.done {
            return Err("already committed".into());
        }
        self.done = true;
        Ok(())
    }
}

impl fmt::Display for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task {}", self.id)
    }
}

pub fn open(id: &str) -> Task {
    Task::new(id)
}
