import { sdkErrors } from "../errors.ts";
import type { GasMeter } from "../module.ts";

/** A gas meter with the SDK's out-of-gas wording; limit Infinity for genesis and block hooks. */
export class BasicGasMeter implements GasMeter {
  #used = 0;

  constructor(readonly limit: number) {}

  get used(): number {
    return this.#used;
  }

  consume(amount: number, descriptor: string): void {
    this.#used += amount;
    if (this.#used > this.limit) {
      throw sdkErrors.outOfGas.wrap(
        `out of gas in location: ${descriptor}; gasWanted: ${this.limit}, gasUsed: ${this.#used}`,
      );
    }
  }
}
