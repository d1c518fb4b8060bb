import { createSign, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Provider } from 'oidc-provider';

/** An account at the test identity provider: its subject (the login typed on its page) and its claims. */
export interface TestAccount {
  email: string;
  email_verified: boolean;
  name?: string;
}

/**
 * How the proxy in front of the provider's token endpoint changes the ID token: not at all; re-signed with a key
 * the provider never published (a forgery); or re-signed with the provider's own key for another audience.
 */
export type Tampering = 'none' | 'forged' | 'wrong_audience';

const b64url = (data: Buffer | string) => Buffer.from(data).toString('base64url');

function signJwt(header: object, payload: object, key: KeyObject): string {
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}`;
  const signature = createSign('RSA-SHA256').update(input).sign(key);
  return `${input}.${b64url(signature)}`;
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/**
 * A real OpenID Connect provider (the `oidc-provider` package, its development login and consent pages) on
 * 127.0.0.1, with one client, and a proxy in front of its token endpoint that can tamper with the ID token.
 * fleethub is pointed at the proxy (`issuerUrl`), which serves the provider's discovery document with its own
 * token endpoint; everything else goes to the provider itself.
 */
export class TestIdentityProvider {
  readonly accounts = new Map<string, TestAccount>();
  tampering: Tampering = 'none';
  private providerServer!: Server;
  private proxyServer!: Server;
  private providerUrl = '';
  issuerUrl = '';
  private readonly signingKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
  private readonly kid = 'test-key';

  constructor(
    private readonly clientId: string,
    private readonly clientSecret: string,
    private readonly redirectUri: string,
  ) {}

  async start(): Promise<void> {
    this.providerServer = createServer();
    const providerPort = await listen(this.providerServer);
    this.providerUrl = `http://127.0.0.1:${providerPort}`;
    const jwk = {
      ...this.signingKey.privateKey.export({ format: 'jwk' }),
      kid: this.kid,
      use: 'sig',
      alg: 'RS256',
    };
    const provider = new Provider(this.providerUrl, {
      clients: [
        {
          client_id: this.clientId,
          client_secret: this.clientSecret,
          redirect_uris: [this.redirectUri],
          grant_types: ['authorization_code'],
          response_types: ['code'],
        },
      ],
      jwks: { keys: [jwk] },
      cookies: { keys: ['test-cookie-key'] },
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
      features: { devInteractions: { enabled: true } },
      pkce: { methods: ['S256'], required: () => true },
      findAccount: (_ctx: unknown, sub: string) => {
        const account = this.accounts.get(sub);
        return account && { accountId: sub, claims: () => ({ sub, ...account }) };
      },
    });
    this.providerServer.on('request', provider.callback());

    this.proxyServer = createServer((req, res) => void this.proxy(req, res));
    const proxyPort = await listen(this.proxyServer);
    this.issuerUrl = `http://127.0.0.1:${proxyPort}`;
  }

  async stop(): Promise<void> {
    await Promise.all([this.providerServer, this.proxyServer].map((s) => new Promise((r) => s.close(r))));
  }

  /**
   * What a browser does from fleethub's start page's redirect (`authorizationUrl`) to the provider's redirect back:
   * the provider's login page (`login` is the account), its consent page, then the URL it sends the browser to.
   */
  async signIn(authorizationUrl: string, login: string): Promise<URL> {
    const cookies = new Map<string, string>();
    let url = authorizationUrl;
    let method = 'GET';
    let body: string | undefined;
    for (let step = 0; step < 20; step++) {
      const res = await fetch(url, {
        method,
        body,
        redirect: 'manual',
        headers: {
          cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
          ...(body && { 'content-type': 'application/x-www-form-urlencoded' }),
        },
      });
      for (const c of res.headers.getSetCookie()) {
        const [pair] = c.split(';');
        const [name, ...value] = pair.split('=');
        cookies.set(name, value.join('='));
      }
      const location = res.headers.get('location');
      if (location) {
        const next = new URL(location, url);
        if (next.href.startsWith(this.redirectUri)) return next;
        [url, method, body] = [next.href, 'GET', undefined];
        continue;
      }
      const html = await res.text();
      const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
      if (!action)
        throw new Error(`the provider answered ${res.status} without a form: ${html.slice(0, 300)}`);
      const fields = new URLSearchParams();
      for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g))
        fields.set(m[1], m[2]);
      if (fields.get('prompt') === 'login') {
        fields.set('login', login);
        fields.set('password', 'any password');
      }
      [url, method, body] = [new URL(action, url).href, 'POST', fields.toString()];
    }
    throw new Error('the provider did not send the browser back');
  }

  private async proxy(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.url === '/.well-known/openid-configuration') {
      const metadata = (await (await fetch(`${this.providerUrl}${req.url}`)).json()) as Record<
        string,
        unknown
      >;
      metadata.token_endpoint = `${this.issuerUrl}/token`;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(metadata));
      return;
    }
    const upstream = await fetch(`${this.providerUrl}${req.url}`, {
      method: req.method,
      headers: Object.fromEntries(
        Object.entries(req.headers).filter(
          ([k, v]) => typeof v === 'string' && k !== 'host' && k !== 'content-length',
        ),
      ) as Record<string, string>,
      body: req.method === 'POST' ? Buffer.concat(chunks) : undefined,
    });
    let text = await upstream.text();
    if (req.url === '/token' && upstream.ok && this.tampering !== 'none') {
      const tokens = JSON.parse(text) as { id_token: string };
      const [header, payload] = tokens.id_token
        .split('.')
        .slice(0, 2)
        .map((part) => JSON.parse(Buffer.from(part, 'base64url').toString()) as Record<string, unknown>);
      if (this.tampering === 'forged') {
        const otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
        tokens.id_token = signJwt(header, { ...payload, email: 'admin@example.com' }, otherKey);
      } else {
        tokens.id_token = signJwt(header, { ...payload, aud: 'another-client' }, this.signingKey.privateKey);
      }
      text = JSON.stringify(tokens);
    }
    res.writeHead(upstream.status, {
      'content-type': upstream.headers.get('content-type') ?? 'application/json',
    });
    res.end(text);
  }
}
