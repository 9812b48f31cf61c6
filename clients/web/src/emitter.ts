// A small typed event emitter: listeners run synchronously in registration order, and one that
// throws does not stop the others (its error is reported to onListenerError).

export class Emitter<Events extends Record<string, unknown>> {
  private readonly listeners = new Map<keyof Events, Set<(ev: never) => void>>();
  onListenerError: (err: unknown) => void = (err) => console.error("qim: event listener failed", err);

  /** on registers fn for type and returns the function that removes it. */
  on<K extends keyof Events>(type: K, fn: (ev: Events[K]) => void): () => void {
    let set = this.listeners.get(type);
    if (!set) this.listeners.set(type, (set = new Set()));
    set.add(fn as (ev: never) => void);
    return () => set.delete(fn as (ev: never) => void);
  }

  emit<K extends keyof Events>(type: K, ev: Events[K]): void {
    for (const fn of this.listeners.get(type) ?? []) {
      try {
        (fn as (ev: Events[K]) => void)(ev);
      } catch (err) {
        this.onListenerError(err);
      }
    }
  }
}
