import { inspect, runSimulatedScript } from './simulated-script';

const device = {
  identifier: 'sim-0007',
  kv: { nerves_fw_version: '1.2.3', nerves_fw_product: 'gateway' },
};
const run = (text: string) => runSimulatedScript(device, text);

describe('runSimulatedScript', () => {
  it('prints and returns as Elixir would: output captured, the last value inspected', () => {
    expect(run('IO.puts("hello")\n:done')).toEqual({
      result: 'completed',
      output: 'hello\n',
      return: ':done',
    });
    expect(run('IO.write "a"; IO.write("b")')).toEqual({ result: 'completed', output: 'ab', return: ':ok' });
    expect(run('IO.inspect("x\\ty")')).toEqual({
      result: 'completed',
      output: '"x\\ty"\n',
      return: '"x\\ty"',
    });
    expect(run('42')).toEqual({ result: 'completed', output: '', return: '42' });
    expect(run('1.5')).toEqual({ result: 'completed', output: '', return: '1.5' });
    expect(run('"with \\"quotes\\""').return).toBe('"with \\"quotes\\""');
  });

  it("answers the device's own facts", () => {
    expect(run('Nerves.Runtime.KV.get("nerves_fw_version")').return).toBe('"1.2.3"');
    expect(run('Nerves.Runtime.KV.get("no_such_key")').return).toBe('nil');
    expect(run('IO.puts Nerves.Runtime.serial_number()').output).toBe('sim-0007\n');
    expect(run('NervesHubLink.connected?()').return).toBe('true');
  });

  it('skips comments and blank lines; an empty script returns nil', () => {
    expect(run('# a comment\n\n  IO.puts("x") # trailing\n')).toEqual({
      result: 'completed',
      output: 'x\n',
      return: ':ok',
    });
    expect(run('')).toEqual({ result: 'completed', output: '', return: 'nil' });
  });

  it('an expression it cannot evaluate raises: the message after the output so far, return nil, the rest not run', () => {
    const answer = run('IO.puts("before")\nFile.rm_rf!("/")\nIO.puts("after")');
    expect(answer.result).toBe('completed');
    expect(answer.return).toBe('nil');
    expect(answer.output).toBe(
      'before\n** (UndefinedFunctionError) the simulated device cannot evaluate File.rm_rf!/1\n',
    );
    expect(run('"unterminated').output).toContain('TokenMissingError');
    expect(run('IO.puts("a", "b")').output).toContain('IO.puts/2');
    expect(run('1 + 2').output).toContain('cannot evaluate');
    expect(run(')').output).toContain('SyntaxError');
  });

  it('inspects like Elixir', () => {
    expect([null, true, 'a"b', 3, { atom: 'ok' }].map(inspect)).toEqual([
      'nil',
      'true',
      '"a\\"b"',
      '3',
      ':ok',
    ]);
  });
});
