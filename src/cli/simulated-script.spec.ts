import { inspect, runSimulatedScript, SimulatedConsole } from './simulated-script';

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

describe('SimulatedConsole (a simulated remote IEx)', () => {
  it('echoes what is typed, evaluates the line on a carriage return and prompts again', () => {
    const iex = new SimulatedConsole(() => device);
    expect(iex.prompt).toBe('iex(1)> ');
    expect(iex.input('Nerves.Runtime.serial_number()')).toBe('Nerves.Runtime.serial_number()');
    expect(iex.input('\r')).toBe('\r\n"sim-0007"\r\niex(2)> ');
    expect([...'IO.puts("a\\nb")\r'].map((c) => iex.input(c)).join('')).toBe(
      'IO.puts("a\\nb")\r\na\r\nb\r\n:ok\r\niex(3)> ',
    );
  });

  it('erases with backspace, prompts again on an empty line, prints errors without a value', () => {
    const iex = new SimulatedConsole(() => device);
    expect(iex.input('42x\u007f\u007f')).toBe('42x\b \b\b \b');
    expect(iex.input('\r')).toBe('\r\n4\r\niex(2)> ');
    expect(iex.input('\r')).toBe('\r\niex(2)> ');
    expect(iex.input('oops\r')).toBe(
      'oops\r\n** (UndefinedFunctionError) the simulated device cannot evaluate oops/0\r\niex(3)> ',
    );
  });
});
