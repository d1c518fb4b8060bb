import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Params } from 'nestjs-pino';
import type { AppConfig } from '../../config/config';

/**
 * JSON logs with request id, method, path, status and duration. Headers and bodies are never logged,
 * so neither tokens nor passwords can reach the logs; the query string is dropped for the same reason.
 */
export function loggerParams(config: Pick<AppConfig, 'logLevel'>): Params {
  return {
    pinoHttp: {
      level: config.logLevel,
      genReqId: (req: IncomingMessage) => (req as { id?: string }).id ?? '',
      customAttributeKeys: { reqId: 'requestId', responseTime: 'durationMs' },
      serializers: {
        req: (req: { id?: string; method?: string; url?: string }) => ({
          method: req.method,
          path: (req.url ?? '').split('?')[0],
        }),
        res: (res: { statusCode?: number }) => ({ status: res.statusCode }),
      },
      customLogLevel: (_req: IncomingMessage, res: ServerResponse, err?: Error) =>
        err || res.statusCode >= 500 ? 'error' : 'info',
      autoLogging: { ignore: (req: IncomingMessage) => req.url === '/healthz' || req.url === '/readyz' },
      redact: { paths: ['req.headers', 'res.headers', '*.password', '*.token', '*.secret'], remove: true },
      quietReqLogger: true,
    },
  };
}
