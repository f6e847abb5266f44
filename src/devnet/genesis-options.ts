/**
 * The genesis facts `fred devnet init` can be given (chain id, PWR denom, module authority,
 * dev account mnemonics): parsed and validated here before anything touches the home, and
 * compared with what an initialised home recorded, so a chain never silently changes them.
 */
import { validateMnemonic } from "@scure/bip39";
import { wordlist } from "@scure/bip39/wordlists/english.js";
import { isValidDenom } from "../core/coin.ts";
import { FredError } from "../core/errors.ts";
import { decodeAddress } from "./address.ts";
import type { KeysFile } from "./home.ts";

export interface ChosenAccount {
  name: string;
  /** Words separated by single spaces (as BIP-39 seeds them and wallets store them). */
  mnemonic: string;
}

export interface GenesisChoices {
  chainId?: string;
  pwrDenom?: string;
  authority?: string;
  accounts?: readonly ChosenAccount[];
}

/** The longest chain id taken (issue #38's limit), inside CometBFT's genesis limit of 50. */
export const MAX_CHAIN_ID_LENGTH = 48;
/** Token factory's limit on the part after `factory/<creator>/`. */
const MAX_SUBDENOM_LENGTH = 44;
/** Dev account names: what `fred devnet keys`, `--from <name>` and `jq` selectors refer to. */
const ACCOUNT_NAME = /^[a-z][a-z0-9_-]{0,63}$/;

const refuse = (message: string) => new FredError("ERR_DEVNET_CONFIG", message);

/** `provider=word word …` → name and normalised mnemonic; the mnemonic is never echoed back. */
export function parseAccountFlag(text: string): ChosenAccount {
  const eq = text.indexOf("=");
  if (eq < 0) throw refuse('--account must be <name>=<mnemonic>, e.g. --account provider="word word …"');
  const name = text.slice(0, eq);
  const mnemonic = text
    .slice(eq + 1)
    .trim()
    .split(/\s+/)
    .join(" ");
  if (!ACCOUNT_NAME.test(name)) {
    // A name with spaces is likely words of a mnemonic put before the '=': not repeated.
    const shown = /\s/.test(name) ? "" : ` ${JSON.stringify(name)}`;
    throw refuse(
      `--account${shown}: a name is a lowercase letter, then up to 63 lowercase letters, digits, '_' or '-'`,
    );
  }
  if (!validateMnemonic(mnemonic, wordlist)) {
    throw refuse(
      `--account ${name}: the mnemonic is not a valid BIP-39 English mnemonic (word list or checksum)`,
    );
  }
  return { name, mnemonic };
}

export function validateChainId(chainId: string): void {
  if (chainId === "") throw refuse("--chain-id must not be empty");
  if (chainId.length > MAX_CHAIN_ID_LENGTH)
    throw refuse(`--chain-id must be at most ${MAX_CHAIN_ID_LENGTH} characters (got ${chainId.length})`);
  if (/\s/.test(chainId)) throw refuse("--chain-id must not contain whitespace");
}

/**
 * The SDK's denom rule; a `factory/<creator>/<subdenom>` denom also needs what token factory
 * checks: a valid account address of this chain as creator and a non-empty short subdenom.
 */
export function validatePwrDenom(denom: string, prefix: string, bondDenom: string): void {
  if (!isValidDenom(denom)) {
    throw refuse(
      `--pwr-denom ${JSON.stringify(denom)} is not a valid denom (a letter, then 2 to 127 letters, digits or / : . _ -)`,
    );
  }
  if (denom === bondDenom)
    throw refuse(`--pwr-denom cannot be ${bondDenom}: that is the fee and staking denom`);
  if (!denom.startsWith("factory/")) return;
  const [, creator = "", ...rest] = denom.split("/");
  const subdenom = rest.join("/");
  try {
    decodeAddress(creator, prefix, "creator");
  } catch (err) {
    throw refuse(
      `--pwr-denom ${denom}: a factory denom is factory/<creator address>/<subdenom>; ${(err as Error).message}`,
    );
  }
  if (subdenom === "" || subdenom.length > MAX_SUBDENOM_LENGTH)
    throw refuse(`--pwr-denom ${denom}: the subdenom must be 1 to ${MAX_SUBDENOM_LENGTH} characters`);
}

export function validateAuthority(address: string, prefix: string): void {
  try {
    decodeAddress(address, prefix, "authority");
  } catch (err) {
    throw refuse(`--authority ${JSON.stringify(address)}: ${(err as Error).message}`);
  }
}

/**
 * Every choice on its own, and the accounts together: no name twice, no mnemonic for two
 * names (one address funded twice under two names). Throws ERR_DEVNET_CONFIG.
 */
export function validateChoices(choices: GenesisChoices, prefix: string, bondDenom: string): void {
  if (choices.chainId !== undefined) validateChainId(choices.chainId);
  if (choices.pwrDenom !== undefined) validatePwrDenom(choices.pwrDenom, prefix, bondDenom);
  if (choices.authority !== undefined) validateAuthority(choices.authority, prefix);
  const names = new Set<string>();
  const mnemonics = new Map<string, string>();
  for (const a of choices.accounts ?? []) {
    const checked = parseAccountFlag(`${a.name}=${a.mnemonic}`);
    if (names.has(a.name)) throw refuse(`--account ${a.name} is given twice`);
    const other = mnemonics.get(checked.mnemonic);
    if (other !== undefined)
      throw refuse(`--account ${other} and --account ${a.name} have the same mnemonic; give each its own`);
    names.add(a.name);
    mnemonics.set(checked.mnemonic, a.name);
  }
}

/**
 * An initialised home keeps its genesis: a choice that differs from what it recorded is
 * refused (a new chain needs a new home), one that matches is fine.
 */
export function refuseChangedGenesis(
  home: string,
  keys: KeysFile,
  facts: { pwrDenom: string },
  choices: GenesisChoices,
): void {
  const changed = (flag: string, was: string, now: string) =>
    refuse(
      `devnet home ${home} was initialised with ${flag} ${was}; it cannot change to ${now} (genesis is fixed: use a new --home for another chain)`,
    );
  if (choices.chainId !== undefined && choices.chainId !== keys.chain_id)
    throw changed("--chain-id", keys.chain_id, choices.chainId);
  if (choices.pwrDenom !== undefined && choices.pwrDenom !== facts.pwrDenom)
    throw changed("--pwr-denom", facts.pwrDenom, choices.pwrDenom);
  if (choices.authority !== undefined && choices.authority !== keys.authority) {
    throw changed(
      "--authority",
      keys.authority ?? "none (POA_ADMIN_ADDRESS or the gov module address at each start)",
      choices.authority,
    );
  }
  for (const chosen of choices.accounts ?? []) {
    const had = keys.accounts.find((a) => a.name === chosen.name);
    if (had === undefined)
      throw refuse(
        `devnet home ${home} has no account ${chosen.name}; accounts are fixed at genesis (use a new --home)`,
      );
    if (had.mnemonic.trim().split(/\s+/).join(" ") !== chosen.mnemonic)
      throw refuse(
        `devnet home ${home} was initialised with another mnemonic for ${chosen.name}; accounts are fixed at genesis (use a new --home)`,
      );
  }
}
