import { SetMetadata, StreamableFile } from '@nestjs/common';
import type { Readable } from 'node:stream';

/** Handler metadata: the route answers a stream that stays open (tests that call every route need to know). */
export const EVENT_STREAM_ROUTE = 'fleethub:event-stream';
export const EventStreamRoute = () => SetMetadata(EVENT_STREAM_ROUTE, true);

/** The media type of Server-Sent Events. */
export const EVENT_STREAM_TYPE = 'text/event-stream; charset=utf-8';

/**
 * A stream of Server-Sent Events as a handler's answer: piped to the response at the reader's pace (Nest's
 * StreamableFile); the stream ending ends the response, and the stream failing (a reader that does not keep up,
 * the instance stopping) closes the connection at once, without a log line (the client reconnects).
 */
export function eventStreamResponse(stream: Readable): StreamableFile {
  return new StreamableFile(stream, { type: EVENT_STREAM_TYPE })
    .setErrorHandler((_err, res) => {
      if (!res.destroyed) res.destroy?.();
    })
    .setErrorLogger(() => undefined);
}
