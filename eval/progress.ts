/** Without a terminal, a line at least this often, so a slow phase still shows it is alive. */
const LOG_INTERVAL_MS = 30_000;

/**
 * A one-line progress bar on stderr with rate and time left. On a terminal it redraws in place;
 * otherwise (CI logs, redirected output) it prints a line every 10%, and at least every 30 s
 * during a slow phase, so logs stay readable.
 */
export class Progress {
  private done = 0;
  private readonly started = performance.now();
  private lastDraw = 0;
  private lastDecile = -1;
  private readonly interactive: boolean;

  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly unit = 'it',
    private readonly stream: NodeJS.WriteStream | null = process.stderr,
  ) {
    this.interactive = Boolean(stream?.isTTY);
    this.draw(true);
  }

  tick(count = 1): void {
    this.done += count;
    this.draw(this.done >= this.total);
  }

  finish(): void {
    this.draw(true);
    if (this.interactive) this.stream?.write('\n');
  }

  private draw(force: boolean): void {
    if (this.stream === null) return;
    const now = performance.now();
    if (this.interactive) {
      if (!force && now - this.lastDraw < 100) return;
      this.lastDraw = now;
      this.stream.write(`\r${this.line(now)}\u001b[K`);
      return;
    }
    const decile = this.total === 0 ? 10 : Math.floor((this.done / this.total) * 10);
    if (decile === this.lastDecile && now - this.lastDraw < LOG_INTERVAL_MS) return;
    this.lastDecile = decile;
    this.lastDraw = now;
    this.stream.write(`${this.line(now)}\n`);
  }

  private line(now: number): string {
    const width = 24;
    const share = this.total === 0 ? 1 : Math.min(1, this.done / this.total);
    const filled = Math.round(share * width);
    const seconds = (now - this.started) / 1000;
    const rate = seconds > 0 ? this.done / seconds : 0;
    const left = rate > 0 ? (this.total - this.done) / rate : Number.NaN;
    const bar = `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
    return `${this.label.padEnd(22)} ${bar} ${this.done}/${this.total} ${this.unit} ${rate.toFixed(1)}/s elapsed ${clock(seconds)} left ${clock(left)}`;
  }
}

export function clock(seconds: number): string {
  if (!Number.isFinite(seconds)) return '--:--';
  const whole = Math.round(seconds);
  const minutes = Math.floor(whole / 60);
  return `${minutes}:${String(whole % 60).padStart(2, '0')}`;
}
