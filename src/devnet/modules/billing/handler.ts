/** Small helpers to declare billing Msg handlers and plain SDK events. */
import { type MessageCodec, toBytes } from "../../../chain/proto/index.ts";
import type { ChainEvent, ExecContext, MsgHandler } from "../../module.ts";

export function ev(type: string, attrs: Record<string, string | undefined>): ChainEvent {
  const attributes = [];
  for (const [key, value] of Object.entries(attrs)) if (value !== undefined) attributes.push({ key, value });
  return { type, attributes };
}

export function defineMsg<T, R>(spec: {
  codec: MessageCodec<T>;
  response: MessageCodec<R>;
  signer: (msg: T) => string;
  validateBasic: (msg: T) => void;
  execute: (ctx: ExecContext, msg: T) => R;
}): MsgHandler<unknown> {
  const handler: MsgHandler<T> = {
    typeUrl: spec.codec.typeUrl,
    responseTypeUrl: spec.response.typeUrl,
    decode: (bytes) => spec.codec.decode(bytes),
    signers: (msg) => [spec.signer(msg)],
    validateBasic: spec.validateBasic,
    execute: (ctx, msg) => toBytes(spec.response, spec.execute(ctx, msg)),
  };
  return handler as MsgHandler<unknown>;
}

/** Emits module events after the message's work succeeded (the chain stages them). */
export class EventBuffer {
  readonly #events: ChainEvent[] = [];
  push(type: string, attrs: Record<string, string | undefined>): void {
    this.#events.push(ev(type, attrs));
  }
  flush(ctx: ExecContext): void {
    for (const e of this.#events) ctx.emit(e);
  }
}
