import fs from 'node:fs';

/** Resident memory of a process, from /proc (Linux). */
export function rssBytes(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match![1]) * 1024;
}

/** Samples a process's RSS every 50 ms until stopped (call stop() in a finally: the process may be gone after). */
export function watchRss(pid: number) {
  const baseline = rssBytes(pid);
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(pid))), 50);
  let stopped = false;
  return {
    /** The peak growth since the start, and a line of figures for the assertion's message. */
    stop() {
      clearInterval(sampler);
      if (!stopped) peak = Math.max(peak, rssBytes(pid));
      stopped = true;
      return {
        growthMb: (peak - baseline) / 1024 ** 2,
        figures: `RSS ${Math.round(baseline / 1024 ** 2)} MB, peak ${Math.round(peak / 1024 ** 2)} MB`,
      };
    },
  };
}
