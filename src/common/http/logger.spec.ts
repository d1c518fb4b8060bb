import { EventEmitter } from 'node:events';
import { Logger } from '@nestjs/common';
import { CapturedLog } from '../../../test/support/captured-log';
import { logProcessErrors } from './logger';

// Created at module load, before any logger is installed: as services' `new Logger(X.name)` fields and the
// module-level loggers are.
const early = new Logger('EarlyService');

describe('AppLogger as Nest’s logger', () => {
  it('lines of Logger instances created before it was installed reach pino, with context and fields', () => {
    const log = new CapturedLog();
    Logger.overrideLogger(log.logger());
    early.log('device 7 completed its update');
    early.warn({ device: 'd-1', reason: 'held_by_member' }, 'iroh endpoint report refused');
    early.error({ err: new Error('socket gone') }, 'device message handling failed');
    expect(log.lines).toEqual([
      expect.objectContaining({ level: 30, context: 'EarlyService', msg: 'device 7 completed its update' }),
      expect.objectContaining({
        level: 40,
        context: 'EarlyService',
        device: 'd-1',
        reason: 'held_by_member',
      }),
      expect.objectContaining({
        level: 50,
        context: 'EarlyService',
        msg: 'device message handling failed',
        err: {
          type: 'Error',
          message: 'socket gone',
          stack: expect.stringMatching(/^Error: socket gone\n\s+at /),
        },
      }),
    ]);
  });

  it('Nest’s own error(message, stack, context) becomes an err with that stack', () => {
    const log = new CapturedLog();
    const error = new Error('Nest can not resolve dependencies');
    log.logger().error(error.message, error.stack, 'ExceptionHandler');
    expect(log.lines[0]).toMatchObject({
      level: 50,
      context: 'ExceptionHandler',
      err: { message: 'Nest can not resolve dependencies', stack: error.stack },
    });
  });

  it('Nest’s start-up chatter is debug; its warnings keep their level', () => {
    const atInfo = new CapturedLog();
    atInfo.logger('info').log('Mapped {/api/orgs, GET} route', 'RouterExplorer');
    atInfo.logger('info').warn('something odd', 'InstanceLoader');
    expect(atInfo.lines).toEqual([expect.objectContaining({ level: 40, msg: 'something odd' })]);
    const atDebug = new CapturedLog();
    atDebug.logger('debug').log('Mapped {/api/orgs, GET} route', 'RouterExplorer');
    expect(atDebug.lines).toEqual([expect.objectContaining({ level: 20, context: 'RouterExplorer' })]);
  });
});

describe('logProcessErrors', () => {
  function fakeProcess() {
    return Object.assign(new EventEmitter(), { exit: jest.fn() });
  }

  it('an unhandled rejection is logged at error with its stack, and the process goes on', () => {
    const log = new CapturedLog();
    const proc = fakeProcess();
    logProcessErrors(log.logger(), proc as unknown as NodeJS.Process);
    proc.emit('unhandledRejection', new RangeError('forgotten promise'), Promise.resolve());
    expect(log.lines).toEqual([
      expect.objectContaining({
        level: 50,
        msg: 'unhandled promise rejection',
        err: expect.objectContaining({
          type: 'RangeError',
          stack: expect.stringContaining('logger.spec.ts'),
        }),
      }),
    ]);
    expect(proc.exit).not.toHaveBeenCalled();
  });

  it('an uncaught exception is logged at fatal with its stack, and ends the process', () => {
    const log = new CapturedLog();
    const proc = fakeProcess();
    logProcessErrors(log.logger(), proc as unknown as NodeJS.Process);
    proc.emit('uncaughtException', new Error('thrown from a timer'));
    expect(log.lines).toEqual([
      expect.objectContaining({
        level: 60,
        msg: 'uncaught exception',
        err: expect.objectContaining({ message: 'thrown from a timer', stack: expect.any(String) }),
      }),
    ]);
    expect(proc.exit).toHaveBeenCalledWith(1);
  });
});
