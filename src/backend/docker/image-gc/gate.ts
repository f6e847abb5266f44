/**
 * Keeps an image removal and a workload creation apart: between the moment a create finds
 * its image present and the moment its container exists, nothing protects the image but
 * this gate (an existing container makes the engine refuse the removal by itself).
 * Creations wait for a removal in progress, then find the image gone and pull it again; a
 * removal is skipped while any creation is in progress and tried again by the next sweep.
 */
export class ImageGate {
  #creating = 0;
  #removal: Promise<unknown> | undefined;

  /** Waits for a removal in progress; the creation counts until the returned handle is disposed. */
  async creating(): Promise<Disposable> {
    while (this.#removal !== undefined) await this.#removal.catch(() => {});
    this.#creating++;
    let open = true;
    return {
      [Symbol.dispose]: () => {
        if (open) this.#creating--;
        open = false;
      },
    };
  }

  /** Runs `removal` when no creation is in progress; `skipped` otherwise. */
  async removing<T>(removal: () => Promise<T>): Promise<{ skipped: true } | { skipped: false; value: T }> {
    if (this.#creating > 0 || this.#removal !== undefined) return { skipped: true };
    const running = removal();
    this.#removal = running;
    try {
      return { skipped: false, value: await running };
    } finally {
      this.#removal = undefined;
    }
  }
}
