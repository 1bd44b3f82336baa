/** Runs one user's tasks one at a time, in arrival order; different users' tasks run side by side. */
export class UserQueue {
  /** Each user's last task, settled or not; it never rejects (a failed task fails only its caller). */
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(userId: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(userId) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(task);
    const tail = run.catch(() => undefined);
    this.tails.set(userId, tail);
    void tail.then(() => {
      if (this.tails.get(userId) === tail) this.tails.delete(userId);
    });
    return run;
  }

  /** Resolves once every task queued so far has settled. */
  async settled(): Promise<void> {
    await Promise.all([...this.tails.values()]);
  }
}
