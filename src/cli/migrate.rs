//! `bookdb migrate`: bring a book to the current format version.

use std::process::ExitCode;

use super::args::{BookArg, JobArgs};

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    book: BookArg,
    /// The facets the migrated book keeps from then on (a comma list of month, speed,
    /// rating, mode, or none; default for chess: all four). Its counts so far are in the
    /// all-unknown cell: unfiltered answers are unchanged.
    #[arg(long, value_name = "LIST", value_parser = bookdb::store::facet::FacetSet::parse)]
    facets: Option<bookdb::store::facet::FacetSet>,
    #[command(flatten)]
    pub(crate) job: JobArgs,
}

impl Args {
    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        let mut opts = self.job.rewrite_options();
        opts.facets = self.facets;
        let summary = bookdb::ops::rewrite::migrate(&self.book.book, &opts)?;
        self.job.output.print(&summary)?;
        Ok(ExitCode::SUCCESS)
    }
}
