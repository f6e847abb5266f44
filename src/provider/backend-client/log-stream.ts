import { LOG_STREAM, type LogStreamEvent, parseLogStreamLine } from "../../core/backend-contract/index.ts";
import { FredError } from "../../core/errors.ts";

/**
 * The events of a backend's NDJSON log stream, as they arrive. At most one event's bytes
 * are held (`LOG_STREAM.maxEventBytes`): a longer line, or one that is not an event of
 * the contract, ends the stream with ERR_BACKEND_TOO_LARGE / ERR_BACKEND_MALFORMED. The
 * body is destroyed whenever the reader stops (returns early or fails).
 */
export async function* logStreamEvents(
  body: AsyncIterable<Buffer> & { destroy(): void },
  backend: string,
): AsyncGenerator<LogStreamEvent> {
  let pending = "";
  const decoder = new TextDecoder();
  try {
    for await (const chunk of body) {
      pending += decoder.decode(chunk, { stream: true });
      let nl = pending.indexOf("\n");
      while (nl >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        if (line !== "") yield parsed(line, backend);
        nl = pending.indexOf("\n");
      }
      if (pending.length > LOG_STREAM.maxEventBytes)
        throw new FredError(
          "ERR_BACKEND_TOO_LARGE",
          `backend ${backend}: a log stream event exceeds ${LOG_STREAM.maxEventBytes} bytes`,
        );
    }
  } finally {
    body.destroy();
  }
}

function parsed(line: string, backend: string): LogStreamEvent {
  const event = line.length > LOG_STREAM.maxEventBytes ? undefined : parseLogStreamLine(line);
  if (event === undefined)
    throw new FredError(
      "ERR_BACKEND_MALFORMED",
      `backend ${backend}: a log stream line is not a contract event`,
    );
  return event;
}
