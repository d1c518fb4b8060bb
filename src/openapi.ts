import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';

export const API_VERSION = '2.0.0';

const TAGS = [
  'Auth',
  'Devices',
  'Devices (short URL)',
  'Firmwares',
  'Iroh Endpoints',
  'Organizations',
  'Organization Members',
  'Products',
  'Signing Keys',
  'Support Scripts',
  'Platform Status',
];

export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('fleethub API')
    .setDescription(
      'The NervesHub management API (2.0.0), served by fleethub. Operations marked "Extension of 2.0.0" ' +
        'complete the specified groups. Authenticate with `Authorization: Bearer <personal access token>`.',
    )
    .setVersion(API_VERSION)
    .addBearerAuth(
      { type: 'http', scheme: 'bearer', description: 'A personal access token (nhu_...)' },
      'bearer_auth',
    )
    .build();
  for (const tag of TAGS) config.tags = [...(config.tags ?? []), { name: tag }];
  return SwaggerModule.createDocument(app, config, {
    operationIdFactory: (controller, method) => `${controller.replace(/Controller$/, '')}_${method}`,
  });
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
