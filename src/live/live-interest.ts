/** What a listener can listen to: a product's events, or the lines of one device. */
export type InterestKind = 'product' | 'device';

/**
 * This instance's own interest: how many listeners each product and device has. `add` and `remove` answer whether
 * the set of ids changed (the first listener of an id, or its last one gone), which is when other instances are told.
 */
export class LocalInterest {
  private readonly counts: Record<InterestKind, Map<string, number>> = {
    product: new Map(),
    device: new Map(),
  };

  has(kind: InterestKind, id: string): boolean {
    return this.counts[kind].has(id);
  }

  add(kind: InterestKind, id: string): boolean {
    const count = this.counts[kind].get(id) ?? 0;
    this.counts[kind].set(id, count + 1);
    return count === 0;
  }

  remove(kind: InterestKind, id: string): boolean {
    const count = this.counts[kind].get(id);
    if (count === undefined) return false;
    if (count > 1) {
      this.counts[kind].set(id, count - 1);
      return false;
    }
    this.counts[kind].delete(id);
    return true;
  }

  ids(kind: InterestKind): string[] {
    return [...this.counts[kind].keys()];
  }

  get empty(): boolean {
    return this.counts.product.size === 0 && this.counts.device.size === 0;
  }
}

/**
 * What the other instances listen to, as they announced it: each id with the instances that want it and until
 * when (an announcement is refreshed every INTEREST_REFRESH_MS and trusted for INTEREST_TTL_MS, so that an
 * instance that died without saying so stops costing the others after a while). Lookups are O(1): they run for
 * every event a device produces.
 */
export class RemoteInterest {
  private readonly wanted: Record<InterestKind, Map<string, Map<string, number>>> = {
    product: new Map(),
    device: new Map(),
  };

  want(kind: InterestKind, instance: string, ids: readonly string[], until: number): void {
    const map = this.wanted[kind];
    for (const id of ids) {
      let instances = map.get(id);
      if (!instances) map.set(id, (instances = new Map<string, number>()));
      instances.set(instance, until);
    }
  }

  unwant(kind: InterestKind, instance: string, ids: readonly string[]): void {
    const map = this.wanted[kind];
    for (const id of ids) {
      const instances = map.get(id);
      if (!instances) continue;
      instances.delete(instance);
      if (instances.size === 0) map.delete(id);
    }
  }

  /** Whether another instance wants `id` at `now`. */
  has(kind: InterestKind, id: string, now: number): boolean {
    const instances = this.wanted[kind].get(id);
    if (!instances) return false;
    for (const until of instances.values()) if (until > now) return true;
    return false;
  }

  /** Forgets what expired by `now`. */
  sweep(now: number): void {
    for (const map of Object.values(this.wanted)) {
      for (const [id, instances] of map) {
        for (const [instance, until] of instances) if (until <= now) instances.delete(instance);
        if (instances.size === 0) map.delete(id);
      }
    }
  }

  /** The products other instances want at `now`. */
  ids(kind: InterestKind, now: number): string[] {
    return [...this.wanted[kind].keys()].filter((id) => this.has(kind, id, now));
  }
}
