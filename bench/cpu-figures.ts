import { round } from './http-load.js';
import type { CpuShare } from './server-process.js';

/** Server CPU per unit of work: what the work costs, whatever share of the machine the server got. */
export function cpuMsPer(share: CpuShare, seconds: number, units: number): number {
  return round((share.server_cores * seconds * 1000) / Math.max(units, 1), 2);
}

export function cpuText(share: CpuShare): string {
  return `cores: server ${share.server_cores}, bench ${share.bench_cores}, others ${share.other_cores}; load ${share.load_avg_1m}`;
}
