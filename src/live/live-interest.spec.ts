import { LocalInterest, RemoteInterest } from './live-interest';

describe('interest in live events', () => {
  it('counts local listeners and says when an id starts and stops being wanted', () => {
    const local = new LocalInterest();
    expect(local.add('product', '1')).toBe(true);
    expect(local.add('product', '1')).toBe(false);
    expect(local.remove('product', '1')).toBe(false);
    expect(local.has('product', '1')).toBe(true);
    expect(local.remove('product', '1')).toBe(true);
    expect(local.empty).toBe(true);
  });

  it("trusts other instances' announcements until they expire or are withdrawn", () => {
    const remote = new RemoteInterest();
    remote.want('product', 'a', ['1', '2'], 1000);
    remote.want('product', 'b', ['1'], 2000);
    expect(remote.has('product', '1', 500)).toBe(true);
    expect(remote.has('device', '1', 500)).toBe(false);
    remote.unwant('product', 'b', ['1']);
    expect(remote.has('product', '1', 1500)).toBe(false);
    expect(remote.ids('product', 500).sort()).toEqual(['1', '2']);
    remote.sweep(1000);
    expect(remote.ids('product', 0)).toEqual([]);
  });
});
