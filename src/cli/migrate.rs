//! `bookdb migrate`: bring a book to the current format version.

use std::process::ExitCode;

use super::args::{BookArg, JobArgs, RewriteMemoryArg, print_warnings};

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    book: BookArg,
    /// A book made before facets (format 3 and older): the facets it keeps from then on (a
    /// comma list of month, speed, rating, mode, or none; default for chess: all four). Its
    /// counts so far are in the all-unknown cell: unfiltered answers are unchanged. A book
    /// with facets keeps its own (other ones are refused).
    #[arg(long, value_name = "LIST", value_parser = bookdb::store::facet::FacetSet::parse)]
    facets: Option<bookdb::store::facet::FacetSet>,
    #[command(flatten)]
    memory: RewriteMemoryArg,
    #[command(flatten)]
    pub(crate) job: JobArgs,
}

impl Args {
    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        let mut opts = self.job.rewrite_options();
        opts.facets = self.facets;
        self.memory.apply(&mut opts);
        let summary = bookdb::ops::rewrite::migrate(&self.book.book, &opts)?;
        if let Some(m) = &summary.migrated {
            print_warnings(&m.memory);
        }
        self.job.output.print(&summary)?;
        Ok(ExitCode::SUCCESS)
    }
}
