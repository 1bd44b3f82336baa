/** A FIFO async lock: one user's writes run one at a time, in arrival order. */
export class Mutex {
  private tail: Promise<void> = Promise.resolve();
  private held = 0;

  get busy(): boolean {
    return this.held > 0;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    const previous = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((resolve) => (release = resolve));
    this.held++;
    try {
      await previous;
      return await task();
    } finally {
      this.held--;
      release();
    }
  }
}
