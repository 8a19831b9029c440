//! The memory budget of an import (`--memory`, and `verify --memory`), fitted to the machine: a
//! budget larger than the memory this process can have is capped (with a warning in the
//! summary), so that an absurd value neither aborts the import on a failed allocation nor
//! drives the machine into swap or the OOM killer. The budget is an upper bound: what the
//! import touches grows with what it reads (see `Aggregator::for_budget`).

/// The share of the machine's memory an import may budget for at most.
const MACHINE_SHARE_NUM: u64 = 3;
const MACHINE_SHARE_DEN: u64 = 4;

/// The memory this process can use: the physical memory (`sysconf(_SC_PHYS_PAGES)`), or the
/// limit of its control group (cgroup v2 `memory.max`) if lower. `None` if neither is known.
pub(crate) fn machine_memory_bytes() -> Option<u64> {
    // SAFETY: sysconf(3) takes an integer name and touches no memory of ours.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let physical = (pages > 0 && page > 0).then(|| (pages as u64).saturating_mul(page as u64));
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok());
    match (physical, cgroup) {
        (Some(p), Some(c)) => Some(p.min(c)),
        (p, c) => p.or(c),
    }
}

/// `--memory` in MiB fitted to a machine with `machine` bytes of memory (`None`: unknown):
/// at most three quarters of it (and at least 1 MiB). Returns the budget and, if it was
/// capped, the warning that says so.
pub(crate) fn fit_budget(memory_mib: usize, machine: Option<u64>) -> (usize, Option<String>) {
    let asked = memory_mib.max(1);
    let Some(machine) = machine else {
        // Unknown: still bounded so that the byte counts derived from it cannot overflow.
        return (asked.min(usize::MAX >> 21), None);
    };
    let cap_mib = usize::try_from((machine / MACHINE_SHARE_DEN * MACHINE_SHARE_NUM) >> 20)
        .unwrap_or(usize::MAX)
        .max(1);
    if asked <= cap_mib {
        return (asked, None);
    }
    (
        cap_mib,
        Some(format!(
            "--memory {memory_mib} MiB is more than this machine has ({} MiB); using {cap_mib} MiB (three quarters of it)",
            machine >> 20
        )),
    )
}

/// The process's peak resident memory (`VmHWM`), where `/proc` tells it.
pub(crate) fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_past_the_machine_is_capped_with_a_warning() {
        let gib = 1u64 << 30;
        assert_eq!(fit_budget(256, Some(8 * gib)), (256, None));
        let (mib, warning) = fit_budget(100_000, Some(8 * gib));
        assert_eq!(mib, 6 * 1024);
        assert!(warning.unwrap().contains("--memory 100000 MiB"));
        let (mib, warning) = fit_budget(usize::MAX, Some(8 * gib));
        assert_eq!(mib, 6 * 1024);
        assert!(warning.is_some());
        assert_eq!(fit_budget(0, Some(8 * gib)), (1, None));
        // Unknown machine: the value stays, bounded so that bytes of it fit a u64.
        assert_eq!(fit_budget(usize::MAX, None), (usize::MAX >> 21, None));
        assert!(machine_memory_bytes().is_some_and(|b| b > 0));
    }
}
