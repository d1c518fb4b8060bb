/** The test identity provider's package ships no types; the tests use its constructor and request handler only. */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';
  export class Provider {
    constructor(issuer: string, configuration: object);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
  }
}
