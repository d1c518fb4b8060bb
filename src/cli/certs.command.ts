import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Command, Option, SubCommand } from 'nest-commander';
import { DEVICE_IDENTIFIER_PATTERN } from '../devices/dto/device.dto';
import { type CertificateAndKey, issue, type KeyKind, loadIssuer, makeCa, serialOf } from './cert-generator';
import { CliCommand, UsageError } from './cli-command';

/** `fleethub certs`: try certificate authentication end to end without any other tool (README "Devices with certificates"). */

const CA_FILE = 'ca.pem';
const CA_KEY_FILE = 'ca-key.pem';
const DEFAULT_DIR = 'fleethub-certs';
const MAX_COUNT = 100_000;

function keyKind(value: string | undefined): KeyKind {
  if (value === undefined || value === 'ec') return 'ec';
  if (value === 'rsa') return 'rsa';
  throw new UsageError('--kind must be ec (ECDSA P-256) or rsa (RSA 2048)');
}

function baseUrl(value: string): string {
  try {
    const url = new URL(value);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error();
    return url.toString().replace(/\/+$/, '');
  } catch {
    throw new UsageError('--url must be the server base URL, e.g. http://127.0.0.1:4000');
  }
}

/** An API call's failure in one line: the status and the body's errors. */
async function apiError(what: string, res: Response): Promise<Error> {
  const text = await res.text();
  let detail = text.slice(0, 500);
  try {
    const body = JSON.parse(text) as { errors?: unknown };
    if (body.errors !== undefined) detail = JSON.stringify(body.errors);
  } catch {
    // not JSON: the text as it is
  }
  return new Error(`${what}: HTTP ${res.status} ${detail}`);
}

/** What a CA registration may carry besides the certificate (NervesHub's body). */
export interface CaRegistration {
  description?: string;
  jitp?: { product_name: string; tags: string[]; description: string | null };
}

/**
 * Registers a CA with an organization through the API, with proof of possession: a verification certificate the
 * CA's key signs, carrying the verification token the server issues to the organization (`GET
 * .../verification_token`, then `POST .../ca_certificates`). Throws with the API's answer on failure.
 */
export async function registerCa(
  url: string,
  token: string,
  org: string,
  ca: CertificateAndKey,
  registration: CaRegistration = {},
): Promise<void> {
  const orgPath = `${url}/api/orgs/${encodeURIComponent(org)}/ca_certificates`;
  const headers = { Authorization: `Bearer ${token}`, Accept: 'application/json' };
  const tokenRes = await fetch(`${orgPath}/verification_token`, { headers });
  if (!tokenRes.ok) throw await apiError('getting a verification token failed', tokenRes);
  const verification = ((await tokenRes.json()) as { data: { verification_token: string } }).data
    .verification_token;
  const issuer = await loadIssuer(ca.cert, ca.key);
  // The proof: a certificate the CA's key signs, carrying the token the server issued to the organization.
  const proof = await issue(issuer, {
    cn: 'verification',
    uris: [`urn:nerveshub:verify:${verification}`],
    days: 1,
  });
  const res = await fetch(orgPath, {
    method: 'POST',
    headers: { ...headers, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      cert: Buffer.from(ca.cert).toString('base64'),
      verification_cert: Buffer.from(proof.cert).toString('base64'),
      ...(registration.description === undefined ? {} : { description: registration.description }),
      ...(registration.jitp ? { jitp: registration.jitp } : {}),
    }),
  });
  if (!res.ok) throw await apiError('registering the CA failed', res);
}

interface CertsCaOptions {
  url?: string;
  token?: string;
  org?: string;
  out?: string;
  description?: string;
  jitpProduct?: string;
  jitpTags?: string;
  jitpDescription?: string;
  kind?: string;
}

@SubCommand({
  name: 'ca',
  description:
    'Make a test CA (ca.pem, ca-key.pem in --out) and register it with an organization through the API, with ' +
    'proof of possession of its key; --jitp-product: devices it signs are created on their first connection',
})
export class CertsCaCommand extends CliCommand<CertsCaOptions> {
  protected async execute(o: CertsCaOptions): Promise<void> {
    const url = baseUrl(this.required(o.url, '--url'));
    const token = this.required(o.token, '--token');
    const org = this.required(o.org, '--org');
    const kind = keyKind(o.kind);
    const dir = resolve(o.out ?? DEFAULT_DIR);
    if (existsSync(join(dir, CA_FILE)) || existsSync(join(dir, CA_KEY_FILE))) {
      throw new UsageError(`${join(dir, CA_FILE)} exists already: choose another --out`);
    }
    const jitp =
      o.jitpProduct === undefined
        ? undefined
        : {
            product_name: o.jitpProduct,
            tags: (o.jitpTags ?? '')
              .split(',')
              .map((tag) => tag.trim())
              .filter((tag) => tag !== ''),
            description: o.jitpDescription ?? null,
          };
    const ca = await makeCa(`${org} test device CA ${new Date().toISOString().slice(0, 10)}`, kind);
    await registerCa(url, token, org, ca, {
      description: o.description ?? 'made by fleethub certs ca',
      jitp,
    });
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, CA_KEY_FILE), ca.key, { mode: 0o600 });
    await writeFile(join(dir, CA_FILE), ca.cert);
    this.print(
      `registered CA ${serialOf(ca.cert)} with organization ${org}${jitp ? ` (JITP into ${jitp.product_name})` : ''}`,
    );
    this.print(`  certificate ${join(dir, CA_FILE)}, key ${join(dir, CA_KEY_FILE)}`);
    this.print(`next: fleethub certs device --ca-dir ${dir} --identifier <device identifier>`);
  }

  @Option({ flags: '--url <url>', description: 'Server base URL, e.g. http://127.0.0.1:4000' })
  parseUrl(value: string): string {
    return value;
  }
  @Option({ flags: '--token <token>', description: 'API token of a member with the manage or admin role' })
  parseToken(value: string): string {
    return value;
  }
  @Option({ flags: '--org <name>', description: 'Organization the CA is registered with' })
  parseOrg(value: string): string {
    return value;
  }
  @Option({
    flags: '--out <dir>',
    description: `Where ca.pem and ca-key.pem are written (default ${DEFAULT_DIR})`,
  })
  parseOut(value: string): string {
    return value;
  }
  @Option({ flags: '--description <text>', description: "The CA's description" })
  parseDescription(value: string): string {
    return value;
  }
  @Option({
    flags: '--jitp-product <name>',
    description: 'JITP: devices this CA signs are created in this product on their first connection',
  })
  parseJitpProduct(value: string): string {
    return value;
  }
  @Option({ flags: '--jitp-tags <tags>', description: 'JITP: tags of the created devices, comma-separated' })
  parseJitpTags(value: string): string {
    return value;
  }
  @Option({ flags: '--jitp-description <text>', description: 'JITP: description of the created devices' })
  parseJitpDescription(value: string): string {
    return value;
  }
  @Option({ flags: '--kind <kind>', description: 'ec (ECDSA P-256, default) or rsa (RSA 2048)' })
  parseKind(value: string): string {
    return value;
  }
}

interface CertsDeviceOptions {
  caDir?: string;
  identifier?: string;
  prefix?: string;
  count?: string;
  out?: string;
  kind?: string;
  days?: string;
}

@SubCommand({
  name: 'device',
  description:
    'Issue device certificates signed by a CA made with "certs ca": <identifier>.pem and <identifier>-key.pem, ' +
    'the identifier as subject common name (one with --identifier, or --count of them named <prefix>0001...)',
})
export class CertsDeviceCommand extends CliCommand<CertsDeviceOptions> {
  protected async execute(o: CertsDeviceOptions): Promise<void> {
    const caDir = resolve(o.caDir ?? DEFAULT_DIR);
    const out = resolve(o.out ?? caDir);
    const kind = keyKind(o.kind);
    const days = o.days === undefined ? 3650 : Number(o.days);
    if (!/^\d{1,5}$/.test(o.days ?? '1') || days < 1)
      throw new UsageError('--days must be a whole number from 1 to 99999');
    const identifiers = this.identifiers(o);
    let caPem: string;
    let keyPem: string;
    try {
      caPem = await readFile(join(caDir, CA_FILE), 'utf8');
      keyPem = await readFile(join(caDir, CA_KEY_FILE), 'utf8');
    } catch {
      throw new UsageError(
        `no CA in ${caDir} (${CA_FILE} and ${CA_KEY_FILE}): make one with "fleethub certs ca"`,
      );
    }
    const issuer = await loadIssuer(caPem, keyPem);
    await mkdir(out, { recursive: true });
    for (const identifier of identifiers) {
      const made = await issue(issuer, { cn: identifier, kind, days });
      await writeFile(join(out, `${identifier}-key.pem`), made.key, { mode: 0o600 });
      await writeFile(join(out, `${identifier}.pem`), made.cert);
    }
    const first = identifiers[0];
    this.print(
      identifiers.length === 1
        ? `issued ${join(out, `${first}.pem`)} (key ${join(out, `${first}-key.pem`)})`
        : `issued ${identifiers.length} device certificates in ${out} (${first}.pem ... ${identifiers[identifiers.length - 1]}.pem)`,
    );
  }

  private identifiers(o: CertsDeviceOptions): string[] {
    let identifiers: string[];
    if (o.identifier !== undefined) {
      if (o.count !== undefined || o.prefix !== undefined) {
        throw new UsageError('--identifier names one device: leave out --count and --prefix');
      }
      identifiers = [o.identifier];
    } else {
      const count = Number(o.count ?? 'x');
      if (!/^\d+$/.test(o.count ?? '') || count < 1 || count > MAX_COUNT) {
        throw new UsageError(`--identifier, or --count (1 to ${MAX_COUNT}) with --prefix, is required`);
      }
      const prefix = o.prefix ?? 'dev-';
      const width = Math.max(4, String(count).length);
      identifiers = Array.from({ length: count }, (_, i) => `${prefix}${String(i + 1).padStart(width, '0')}`);
    }
    for (const identifier of identifiers) {
      if (!DEVICE_IDENTIFIER_PATTERN.test(identifier) || identifier.startsWith('.')) {
        throw new UsageError(`"${identifier}" cannot be a device identifier (nor a file name)`);
      }
    }
    return identifiers;
  }

  @Option({ flags: '--ca-dir <dir>', description: `Where "certs ca" wrote the CA (default ${DEFAULT_DIR})` })
  parseCaDir(value: string): string {
    return value;
  }
  @Option({ flags: '--identifier <identifier>', description: 'The device identifier (subject common name)' })
  parseIdentifier(value: string): string {
    return value;
  }
  @Option({ flags: '--count <n>', description: 'How many devices, named <prefix>0001...' })
  parseCount(value: string): string {
    return value;
  }
  @Option({ flags: '--prefix <prefix>', description: 'Identifier prefix with --count (default dev-)' })
  parsePrefix(value: string): string {
    return value;
  }
  @Option({ flags: '--out <dir>', description: 'Where the files are written (default: the CA directory)' })
  parseOut(value: string): string {
    return value;
  }
  @Option({ flags: '--kind <kind>', description: 'ec (ECDSA P-256, default) or rsa (RSA 2048)' })
  parseKind(value: string): string {
    return value;
  }
  @Option({ flags: '--days <n>', description: 'Validity in days (default 3650)' })
  parseDays(value: string): string {
    return value;
  }
}

@Command({
  name: 'certs',
  description:
    'Test certificates for the mTLS device socket: a CA registered with proof of possession, device certificates',
  subCommands: [CertsCaCommand, CertsDeviceCommand],
})
export class CertsCommand extends CliCommand<object> {
  protected async execute(): Promise<void> {
    throw new UsageError(
      'usage: fleethub certs ca --url U --token T --org O [--jitp-product P] | certs device ...',
    );
  }
}

/** The `certs` commands: network clients of a server or local files only, no database. */
export const CERTS_COMMANDS = [CertsCommand, CertsCaCommand, CertsDeviceCommand];
