import { type ArgumentMetadata, Injectable, ValidationPipe, type ValidationError } from '@nestjs/common';
import { DomainError, type FieldErrors } from '../errors/domain-error';

/**
 * Optional hooks a body DTO class can declare:
 * - `unwrapKey`: a body `{[unwrapKey]: {...}}` is read as its inner object (NervesHub wraps some bodies).
 * - `unknownFieldMessage`: any key without a validator is an error (named with this message) instead of
 *   being ignored. With `unwrapKey` too, keys beside the envelope are such errors as well, and an envelope
 *   that is not an object is one.
 */
export interface BodyDtoHooks {
  unwrapKey?: string;
  unknownFieldMessage?: (field: string) => string;
}

const ENVELOPE_NOT_AN_OBJECT = 'must be a JSON object';

function flatten(errors: ValidationError[], prefix = '', out: FieldErrors = {}): FieldErrors {
  for (const error of errors) {
    const field = prefix ? `${prefix}.${error.property}` : error.property;
    if (error.constraints) {
      // One message per field: the first failing rule is the clearest.
      const messages = Object.values(error.constraints);
      out[field] = [...(out[field] ?? []), messages[messages.length - 1]];
    }
    if (error.children?.length) flatten(error.children, field, out);
  }
  return out;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Validates bodies and queries into DTOs and answers with the contract's 400/422 bodies. */
@Injectable()
export class ContractValidationPipe extends ValidationPipe {
  constructor() {
    super({
      transform: true,
      whitelist: true,
      forbidNonWhitelisted: false,
      forbidUnknownValues: false,
      validationError: { target: false, value: false },
      exceptionFactory: (errors) => DomainError.invalid(flatten(errors)),
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    // Nest passes every custom parameter decorator's value (the actor, the access) through the global pipes;
    // ValidationPipe returns it unchanged (no validateCustomDecorators), after a few calls: return it now.
    if (metadata.type === 'custom') return value;
    if (metadata.type === 'body' && metadata.metatype && metadata.metatype !== Object) {
      let body = value === undefined ? {} : value;
      if (!isPlainObject(body)) throw DomainError.badRequest('request body must be a JSON object');
      const hooks = metadata.metatype as BodyDtoHooks & { prototype: object };
      if (hooks.unknownFieldMessage) body = this.strictBody(body, hooks, metadata);
      else if (hooks.unwrapKey && isPlainObject(body[hooks.unwrapKey]))
        body = body[hooks.unwrapKey] as object;
      value = body;
    }
    return super.transform(value, metadata);
  }

  /** The body (unwrapped from its envelope if it has one), or a 422 naming every key the DTO does not know. */
  private strictBody(
    body: Record<string, unknown>,
    hooks: BodyDtoHooks,
    metadata: ArgumentMetadata,
  ): Record<string, unknown> {
    const fields: FieldErrors = {};
    let inner = body;
    if (hooks.unwrapKey && Object.hasOwn(body, hooks.unwrapKey)) {
      const { [hooks.unwrapKey]: envelope, ...beside } = body;
      inner = isPlainObject(envelope) ? envelope : {};
      if (!isPlainObject(envelope)) fields[hooks.unwrapKey] = [ENVELOPE_NOT_AN_OBJECT];
      for (const key of Object.keys(beside)) fields[key] = [hooks.unknownFieldMessage!(key)];
    }
    const known = new Set(knownProperties(metadata.metatype!));
    for (const key of Object.keys(inner)) {
      if (!known.has(key)) fields[key] = [hooks.unknownFieldMessage!(key)];
    }
    if (Object.keys(fields).length > 0) throw DomainError.invalid(fields);
    return inner;
  }
}

// class-validator keeps its metadata in a global storage; the DTO's validated property names are what
// the DTO accepts.
function knownProperties(metatype: Function): string[] {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { getMetadataStorage } = require('class-validator') as typeof import('class-validator');
  const storage = getMetadataStorage();
  return storage
    .getTargetValidationMetadatas(metatype, '', true, false)
    .map((m) => m.propertyName)
    .filter((name, index, all) => all.indexOf(name) === index);
}
