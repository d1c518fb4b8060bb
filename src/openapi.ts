import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { SESSION_COOKIE } from './browser-sessions/session-request';
import { eventCallback, eventSchemas } from './webhooks/webhook-event-types';
import { MAX_JSON_BODY_BYTES, MAX_JSON_DEPTH, MAX_JSON_VALUES } from './common/validation/json-limits';

export const API_VERSION = '2.0.0';

const TAGS: Record<string, string> = {
  Auth: 'The caller and personal access tokens',
  'Browser Sessions':
    'Sign-in in a browser: a session in an HttpOnly cookie, with a CSRF token for every change it makes',
  Devices: "A product's device fleet: register, list, change, upgrade, console",
  'Devices (short URL)': 'A device by its identifier alone, among the organizations of the caller',
  Firmwares: 'Signed fwup firmware archives of a product',
  'Iroh Endpoints': 'Iroh endpoint ids of devices and users, for peer-to-peer access',
  Organizations: 'Organizations the caller belongs to',
  'Organization Members': 'Members of an organization and their roles (view, manage, admin)',
  'Organization Policies':
    'What an organization requires of its members: two-factor sign-in, the age and scopes of personal access tokens',
  Products: "An organization's products and their firmware policy",
  'Signing Keys': 'Ed25519 public keys that firmware signatures are checked with',
  'Support Scripts': 'Scripts kept per product to run on device consoles',
  'Platform Status': 'Liveness and readiness probes (no token)',
  'Device firmware download': 'Signed, expiring firmware links that devices download updates from (no token)',
  Archives:
    'Signed fwup files that are not firmware (models, configuration), attached to deployment groups and sent ' +
    'to their devices',
  'Device archive download': 'Signed, expiring archive links that devices download archives from (no token)',
  'CA Certificates':
    'CA certificates an organization registered (with proof of possession of the key): devices whose ' +
    'certificates they signed authenticate, and may be provisioned just in time',
  'Device Certificates': 'Client certificates registered for one device, which it can authenticate with',
  'Deployment Groups': "Automatic, staged rollouts of a firmware to the product's matching devices",
  'Network Identities':
    'Keys a device reported holding on other networks (iroh, NetBird, Tailscale, WireGuard)',
  'Device Logs': 'Log lines devices send through the `logging` extension, kept for a few days',
  'Device Health': 'The latest health report and location of a device, and the history of its metrics',
  'Live Events':
    "A product's devices as they change, pushed as Server-Sent Events: connections, updates, rollout counts, " +
    "and one device's console and logs",
  'Fleet Overview':
    "A product's fleet at a glance: connected now and over time, firmware versions, rollouts, health alarms",
  Webhooks:
    "An organization's events POSTed to its endpoints, signed as Standard Webhooks define, at least once and in " +
    'order per subject; the event catalogue is in `components.schemas` (`WebhookEvent_<type>_v<version>`)',
};

export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('fleethub API')
    .setDescription(
      'The NervesHub management API (2.0.0), served by fleethub. Operations marked "Extension of 2.0.0" ' +
        'complete the specified groups. Authenticate with `Authorization: Bearer <personal access token>`. ' +
        'A browser may use the session cookie of `POST /api/session` instead (when it sends no ' +
        '`Authorization`); every change made with the cookie needs the header `X-CSRF-Token`.\n\n' +
        `Request bodies are JSON of at most ${MAX_JSON_BODY_BYTES / 1024 / 1024} MiB, nested at most ` +
        `${MAX_JSON_DEPTH} levels of objects and arrays, with at most ${MAX_JSON_VALUES} values in all (every ` +
        'object, array, string, number, boolean and null counts). A larger body gets a 413; a deeper one, or ' +
        'one with more values, a 400 before any field is looked at. Fields may have tighter limits of their ' +
        'own (a 422 naming the field).',
    )
    .setVersion(API_VERSION)
    .setLicense('Apache-2.0', 'https://www.apache.org/licenses/LICENSE-2.0')
    .addServer('/', 'This fleethub server')
    .addBearerAuth(
      { type: 'http', scheme: 'bearer', description: 'A personal access token (nhu_...)' },
      'bearer_auth',
    )
    .addCookieAuth(
      SESSION_COOKIE,
      {
        type: 'apiKey',
        in: 'cookie',
        description: 'The browser session of `POST /api/session` (changes also need `X-CSRF-Token`)',
      },
      'session_cookie',
    )
    .build();
  config.tags = Object.entries(TAGS).map(([name, description]) => ({ name, description }));
  const document = SwaggerModule.createDocument(app, config, {
    operationIdFactory: (controller, method) => `${controller.replace(/Controller$/, '')}_${method}`,
  });
  document.components = document.components ?? {};
  const create = document.paths['/api/orgs/{org_name}/webhooks']?.post;
  if (create) create.callbacks = eventCallback() as NonNullable<typeof create.callbacks>;
  document.components.schemas = {
    ...document.components.schemas,
    ...(eventSchemas() as NonNullable<typeof document.components.schemas>),
  };
  return document;
}

/** `/api/openapi.json` and Swagger UI at `/api/docs`, served from the bundled swagger-ui-dist (offline). */
export function setupOpenApi(app: INestApplication): void {
  const document = buildOpenApiDocument(app);
  SwaggerModule.setup('api/docs', app, document, {
    jsonDocumentUrl: 'api/openapi.json',
    yamlDocumentUrl: 'api/openapi.yaml',
    customSiteTitle: 'fleethub API',
    swaggerOptions: { persistAuthorization: true },
  });
}
