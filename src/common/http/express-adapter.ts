import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import type { NestApplicationOptions } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { Express } from 'express';

type Construct = (this: object, first: unknown, second?: unknown) => void;

/** Node's HTTP classes are function constructors (not ES classes): a subclass can call them on its `this`. */
const callable = (base: object) => !/^class\b/.test(Function.prototype.toString.call(base));

/**
 * A constructor for Node's HTTP server whose instances are born with `prototype` (Express's `app.request` or
 * `app.response`, which inherit from Node's own classes). Called on `this`, not through Reflect.construct, which
 * costs more than it saves.
 */
function bornWith(base: object, prototype: object): object {
  const init = base as Construct;
  function Born(this: object, first: unknown, second?: unknown): void {
    init.call(this, first, second);
  }
  Born.prototype = prototype;
  return Born;
}

/**
 * Nest's Express adapter, with one difference: Express switches every request's and response's prototype to its
 * own (`Object.setPrototypeOf(req, app.request)` on entry), and V8 then handles them, in Node's HTTP code and
 * Express's alike, as objects whose shape changed after construction, on slower paths for the whole request. This
 * server constructs them with those prototypes from the start, so that Express's call changes nothing. Measured on
 * a one-route Express app: 0.035 instead of 0.105 ms of CPU per request; fleethub's users/me: see bench/README.md.
 */
export class ExpressHttpAdapter extends ExpressAdapter {
  override initHttpServer(options: NestApplicationOptions): void {
    if (
      options.httpsOptions ||
      options.forceCloseConnections ||
      !callable(IncomingMessage) ||
      !callable(ServerResponse)
    ) {
      return super.initHttpServer(options);
    }
    const app = this.getInstance<Express>();
    this.httpServer = createServer(
      {
        IncomingMessage: bornWith(IncomingMessage, app.request) as typeof IncomingMessage,
        ServerResponse: bornWith(ServerResponse, app.response) as typeof ServerResponse,
      },
      app,
    );
  }
}
