import { GatewayPeers } from './gateway-peers';

describe('GatewayPeers', () => {
  afterEach(() => jest.useRealTimers());

  it('assumes other instances until a lease renewal counts none', () => {
    const peers = new GatewayPeers();
    expect(peers.alone).toBe(false);
    peers.counted(0);
    expect(peers.alone).toBe(true);
    peers.counted(2);
    expect(peers.alone).toBe(false);
  });

  it('is not alone for 30 s after another instance was heard on the bus, whatever the leases said', () => {
    jest.useFakeTimers({ now: 1_000_000 });
    const peers = new GatewayPeers();
    peers.counted(0);
    peers.heard();
    expect(peers.alone).toBe(false);
    jest.setSystemTime(1_000_000 + 29_000);
    expect(peers.alone).toBe(false);
    jest.setSystemTime(1_000_000 + 31_000);
    expect(peers.alone).toBe(true);
  });
});
