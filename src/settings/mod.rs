//! The settings of a build: [`ContextBuilder`](crate::ContextBuilder), its
//! fields and setters, and the questions the pipeline asks of them (which
//! chunks it selects, which counter it counts with, which tags a cap may
//! name).

pub(crate) mod builder;
