import { applyDecorators, SetMetadata, type Type } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiExtraModels,
  ApiOperation,
  ApiProperty,
  ApiQuery,
  ApiResponse,
  getSchemaPath,
} from '@nestjs/swagger';
import { NOT_FOUND_DETAIL } from '../errors/error-codes';

export class DetailErrors {
  @ApiProperty({ example: NOT_FOUND_DETAIL }) detail: string;
}

export class DetailErrorBody {
  @ApiProperty({ type: DetailErrors }) errors: DetailErrors;
}

export class FieldErrorBody {
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'array', items: { type: 'string' } },
    example: { name: ["can't be blank"] },
    description: 'Each invalid field mapped to its messages',
  })
  errors: Record<string, string[]>;
}

export class AuthErrorBody {
  @ApiProperty({ enum: ['unauthorized', 'forbidden'], example: 'unauthorized' }) error: string;
}

const ERROR_DOCS: Record<number, { description: string; type: Type<unknown> }> = {
  400: {
    description:
      'Body is not valid JSON, not a JSON object, nested too deeply or holding too many values (see the API description)',
    type: DetailErrorBody,
  },
  401: { description: 'Missing, malformed, unknown, revoked or expired token', type: AuthErrorBody },
  403: {
    description:
      'A read-scoped token used for a change (`{"error":"forbidden"}`), a member whose role is too low, or a change made with a browser session cookie without its `X-CSRF-Token` or from another site (`{"errors":{"detail":...}}`)',
    type: DetailErrorBody,
  },
  404: { description: 'Not found, or not a member of the organization', type: DetailErrorBody },
  409: { description: 'Conflicts with the current state', type: DetailErrorBody },
  413: { description: 'Body over the size limit', type: DetailErrorBody },
  422: { description: 'Validation failed', type: FieldErrorBody },
  429: { description: 'Rate limit exceeded (see Retry-After)', type: DetailErrorBody },
  503: { description: 'Database unreachable', type: DetailErrorBody },
};

/** Handler metadata: what ApiOperationDoc documented as the success status and whether it names `Location`. */
export const DOCUMENTED_ANSWER = 'fleethub:documented-answer';
export interface DocumentedAnswer {
  status: number;
  location: boolean;
}

export interface OperationDoc {
  summary: string;
  description?: string;
  /**
   * HTTP status of success as documented; the default is 200. The handler answers it by Nest's default for its
   * method or by its own `@HttpCode` (a test checks that the two agree).
   */
  status?: number;
  /**
   * A success body that is not JSON (its media type and what it holds; `schema` when it has a structure, with the
   * `models` it refers to); error bodies stay JSON.
   */
  text?: { mediaType: string; description: string; schema?: object; models?: Type<unknown>[] };
  /** The `data` record type, or undefined for no content. */
  data?: Type<unknown> | [Type<unknown>];
  /** Extra top-level properties of the success body (e.g. pagination). */
  extra?: Record<string, Type<unknown>>;
  /** Error statuses besides the ones every authenticated route has (401, 403, 404, 503). */
  errors?: number[];
  /**
   * A status whose body on this route may also be one of NervesHub's (a compatibility exception): documented as
   * `oneOf` the usual body and these, with this description.
   */
  nervesHubErrors?: Record<number, { description: string; types: Type<unknown>[] }>;
  isPublic?: boolean;
  deprecated?: boolean;
  /** Response headers as documented; a handler that answers `Location` has `@SetsLocation()` (checked by a test). */
  headers?: Record<string, { description: string }>;
}

/**
 * Documents one operation: summary, success body wrapped in `data`, and every error it can answer. It documents
 * only: the status a handler answers and its `Location` header are the handler's own decorators.
 */
export function ApiOperationDoc(doc: OperationDoc) {
  const status = doc.status ?? 200;
  const headers = doc.headers
    ? Object.fromEntries(
        Object.entries(doc.headers).map(([name, header]) => [
          name,
          { ...header, schema: { type: 'string' } },
        ]),
      )
    : undefined;
  const models: Type<unknown>[] = [DetailErrorBody, FieldErrorBody, AuthErrorBody];
  const documented: DocumentedAnswer = { status, location: Boolean(doc.headers?.Location) };
  const decorators = [
    SetMetadata(DOCUMENTED_ANSWER, documented),
    ApiOperation({ summary: doc.summary, description: doc.description, deprecated: doc.deprecated }),
  ];
  if (doc.data) {
    const model = Array.isArray(doc.data) ? doc.data[0] : doc.data;
    models.push(model);
    const dataSchema = Array.isArray(doc.data)
      ? { type: 'array' as const, items: { $ref: getSchemaPath(model) } }
      : { $ref: getSchemaPath(model) };
    const extra: Record<string, object> = {};
    for (const [key, type] of Object.entries(doc.extra ?? {})) {
      models.push(type);
      extra[key] = { $ref: getSchemaPath(type) };
    }
    decorators.push(
      ApiResponse({
        status,
        description: 'Success',
        headers,
        schema: { type: 'object', required: ['data'], properties: { data: dataSchema, ...extra } },
      }),
    );
  } else if (doc.text) {
    models.push(...(doc.text.models ?? []));
    decorators.push(
      ApiResponse({
        status,
        description: doc.text.description,
        headers,
        content: { [doc.text.mediaType]: { schema: doc.text.schema ?? { type: 'string' } } },
      }),
    );
  } else {
    decorators.push(ApiResponse({ status, description: 'Success, no content', headers }));
  }
  const errors = new Set(doc.isPublic ? [] : [401, 403, 404]);
  for (const code of doc.errors ?? []) errors.add(code);
  errors.add(503);
  for (const code of Object.keys(doc.nervesHubErrors ?? {})) errors.add(Number(code));
  for (const code of [...errors].sort()) {
    const { description, type } = ERROR_DOCS[code];
    const nervesHub = doc.nervesHubErrors?.[code];
    if (nervesHub) {
      models.push(...nervesHub.types);
      const types = [...new Set([type, ...(code === 403 ? [AuthErrorBody] : []), ...nervesHub.types])];
      decorators.push(
        ApiResponse({
          status: code,
          description: `${nervesHub.description}; or: ${description}`,
          schema: { oneOf: types.map((t) => ({ $ref: getSchemaPath(t) })) },
        }),
      );
    } else {
      decorators.push(ApiResponse({ status: code, description, type }));
    }
  }
  if (!doc.isPublic) decorators.push(ApiBearerAuth('bearer_auth'));
  return applyDecorators(ApiExtraModels(...models), ...decorators);
}

/** The page parameters of a list paginated as devices are (`pagination[page]`, `pagination[page_size]`). */
export function ApiPaginationQuery() {
  return applyDecorators(
    ApiQuery({
      name: 'pagination[page]',
      required: false,
      schema: { type: 'integer', minimum: 1, default: 1 },
    }),
    ApiQuery({
      name: 'pagination[page_size]',
      required: false,
      schema: { type: 'integer', minimum: 1, maximum: 500, default: 10 },
    }),
  );
}

/** The answers of a stored file besides its 200 (`answerStoredFile`): a byte range, the store's link, a bad range. */
export function ApiStoredFileResponses() {
  return applyDecorators(
    ApiResponse({ status: 206, description: 'The requested byte range (`Content-Range`)' }),
    ApiResponse({
      status: 302,
      description: 'Object storage: `Location` is a presigned URL of the file in the bucket',
    }),
    ApiResponse({
      status: 416,
      description: 'Range not satisfiable (`Content-Range: bytes */<size>`, empty body)',
    }),
  );
}
