//! Progress of a long run, reported to whoever draws it (the binary's progress bar; nothing in
//! tests). The library never prints a progress bar itself.

/// One progress event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// What is being done now.
    Message(String),
    /// How many units the whole run has (a bar's length).
    Length(u64),
    /// One or more units are done.
    Advance(u64),
    /// Where the run is now, in units of [`Step::Length`].
    Position(u64),
}

/// A sink for [`Step`]s.
pub type Progress<'a> = &'a (dyn Fn(Step) + Sync);

/// A sink that drops every step.
pub fn quiet(_: Step) {}
