import {
  MsgMultiSend,
  MsgMultiSendResponse,
  MsgSend,
  MsgSendResponse,
} from "cosmjs-types/cosmos/bank/v1beta1/tx";
import type { Coin } from "cosmjs-types/cosmos/base/v1beta1/coin";
import { decodeAddress } from "../../address.ts";
import { normalize, validateCoins } from "../../coins.ts";
import { ChainError, sdkErrors } from "../../errors.ts";
import type { AppHandle, DevnetModule, MsgHandler } from "../../module.ts";
import { AUTH, type AuthKeeper } from "../auth/types.ts";
import { createBankKeeper } from "./keeper.ts";
import { bankQueries } from "./queries.ts";
import { BANK } from "./types.ts";

/** x/bank: balances, supply, MsgSend and MsgMultiSend, and the balance queries cosmjs uses. */
export function bankModule(app: AppHandle): DevnetModule {
  const keeper = createBankKeeper(app.keeper<AuthKeeper>(AUTH));
  const prefix = app.bech32Prefix;

  const send: MsgHandler<MsgSend> = {
    typeUrl: "/cosmos.bank.v1beta1.MsgSend",
    responseTypeUrl: "/cosmos.bank.v1beta1.MsgSendResponse",
    decode: (bytes) => MsgSend.decode(bytes),
    signers: (msg) => [msg.fromAddress],
    validateBasic(msg) {
      decodeAddress(msg.fromAddress, prefix, "from address");
      decodeAddress(msg.toAddress, prefix, "to address");
      validateCoins(msg.amount);
    },
    execute(ctx, msg) {
      keeper.sendCoins(ctx, msg.fromAddress, msg.toAddress, msg.amount);
      return MsgSendResponse.encode({}).finish();
    },
  };

  const multiSend: MsgHandler<MsgMultiSend> = {
    typeUrl: "/cosmos.bank.v1beta1.MsgMultiSend",
    responseTypeUrl: "/cosmos.bank.v1beta1.MsgMultiSendResponse",
    decode: (bytes) => MsgMultiSend.decode(bytes),
    signers: (msg) => msg.inputs.map((i) => i.address),
    validateBasic(msg) {
      if (msg.inputs.length === 0) throw sdkErrors.invalidRequest.wrap("no inputs to send transaction");
      if (msg.inputs.length > 1) throw sdkErrors.invalidRequest.wrap("multiple senders not allowed");
      if (msg.outputs.length === 0) throw sdkErrors.invalidRequest.wrap("no outputs to send transaction");
      for (const io of [...msg.inputs, ...msg.outputs]) {
        decodeAddress(io.address, prefix);
        validateCoins(io.coins);
      }
      const total = (list: { coins: Coin[] }[]) => normalize(list.flatMap((x) => x.coins));
      const inSum = total(msg.inputs);
      const outSum = total(msg.outputs);
      if (JSON.stringify(inSum) !== JSON.stringify(outSum)) {
        throw new ChainError("bank", 3, "sum inputs != sum outputs");
      }
    },
    execute(ctx, msg) {
      const input = msg.inputs[0];
      if (!input) throw sdkErrors.invalidRequest.wrap("no inputs to send transaction");
      for (const out of msg.outputs) keeper.sendCoins(ctx, input.address, out.address, out.coins);
      return MsgMultiSendResponse.encode({}).finish();
    },
  };

  return {
    name: BANK,
    keeper,
    messages: [send, multiSend] as MsgHandler<unknown>[],
    queries: bankQueries(keeper, prefix),
  };
}
