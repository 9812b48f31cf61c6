// Reconnect delays (docs/protocol.md §7.1): exponential from a base to a cap, each delay
// jittered down by up to a fifth so clients dropped together do not return together.

export class Backoff {
  private attempt = 0;
  constructor(
    private readonly baseMs: number,
    private readonly capMs: number,
    private readonly random: () => number = Math.random,
  ) {}

  /** next is the delay before the next attempt. */
  next(): number {
    const d = Math.min(this.capMs, this.baseMs * 2 ** Math.min(this.attempt, 30));
    this.attempt++;
    return Math.round(d * (1 - 0.2 * this.random()));
  }

  reset(): void {
    this.attempt = 0;
  }
}
