import { decodeEnvelope, encodeEnvelope } from '../src/gateway/device-bus';
import { CLOSES_PER_MESSAGE } from '../src/gateway/device-relay';
import {
  joinUpdateTool,
  metadataFromJoin,
  normaliseStatus,
  updatePayload,
  deltaUpdatePayload,
} from '../src/gateway/device-link.service';
import { DownloadLinkSigner, deriveLinkKey, downloadPath } from '../src/gateway/download-links';
import { parseRange } from '../src/firmware/storage/byte-range';
import { codePoints, decodeFrame, encodePush, encodeReply } from '../src/gateway/phoenix-frames';
import { deviceSocketUrl, simulatedIrohKey } from '../src/cli/simulator';

describe('Phoenix V2 framing', () => {
  it('decodes a join and a push', () => {
    expect(decodeFrame('["1","1","device","phx_join",{"a":1}]')).toEqual({
      joinRef: '1',
      ref: '1',
      topic: 'device',
      event: 'phx_join',
      payload: { a: 1 },
    });
    expect(decodeFrame('[null,"7","phoenix","heartbeat",{}]')).toMatchObject({ joinRef: null, ref: '7' });
  });

  it('accepts numeric refs (old clients) as their decimal text, and a non-object payload as {}', () => {
    expect(decodeFrame('[1,2,"device","x",[1]]')).toEqual({
      joinRef: '1',
      ref: '2',
      topic: 'device',
      event: 'x',
      payload: {},
    });
    expect(decodeFrame('[null,null,"device","x",null]')?.payload).toEqual({});
  });

  it.each([
    ['not JSON', '{"a":'],
    ['empty', ''],
    ['an object', '{"topic":"device"}'],
    ['too short', '["1","1","device","x"]'],
    ['too long', '["1","1","device","x",{},1]'],
    ['a numeric topic', '["1","1",5,"x",{}]'],
    ['an empty event', '["1","1","device","",{}]'],
    ['an object ref', '[{},"1","device","x",{}]'],
    ['a fractional ref', '[1.5,"1","device","x",{}]'],
    ['a huge ref', `["${'9'.repeat(65)}","1","device","x",{}]`],
    ['a huge topic', `["1","1","${'t'.repeat(256)}","x",{}]`],
    ['null', 'null'],
  ])('rejects %s', (_name, text) => {
    expect(decodeFrame(text)).toBeNull();
  });

  it('encodes pushes with a null ref and replies with the request refs', () => {
    expect(encodePush('3', 'device', 'update', { a: 1 })).toBe('["3",null,"device","update",{"a":1}]');
    const frame = decodeFrame('[null,"9","phoenix","heartbeat",{}]')!;
    expect(encodeReply(frame, 'ok', {})).toBe(
      '[null,"9","phoenix","phx_reply",{"status":"ok","response":{}}]',
    );
  });

  it('splits text into code points, keeping surrogate pairs whole', () => {
    expect(codePoints('aé😀\r')).toEqual(['a', 'é', '😀', '\r']);
    expect(codePoints('')).toEqual([]);
  });
});

describe('download links', () => {
  const key = deriveLinkKey('a'.repeat(40));
  let now = 1_700_000_000_000;
  const signer = new DownloadLinkSigner(key, 'https://hub.example', () => now);

  it('signs the path and expiry; verification is exact and expires', () => {
    const url = new URL(signer.url('42', 'abc.fw', 60));
    expect(url.origin + url.pathname).toBe('https://hub.example/device-firmware/42/abc.fw');
    const expires = url.searchParams.get('expires')!;
    const signature = url.searchParams.get('signature')!;
    expect(Number(expires)).toBe(1_700_000_060);
    expect(signer.verify(downloadPath('42', 'abc.fw'), expires, signature)).toBe(true);
    expect(signer.verify(downloadPath('43', 'abc.fw'), expires, signature)).toBe(false);
    expect(signer.verify(downloadPath('42', 'abc.bin'), expires, signature)).toBe(false);
    expect(signer.verify(downloadPath('42', 'abc.fw'), String(Number(expires) + 1), signature)).toBe(false);
    expect(signer.verify(downloadPath('42', 'abc.fw'), expires, `${signature}x`)).toBe(false);
    expect(signer.verify(downloadPath('42', 'abc.fw'), undefined, signature)).toBe(false);
    expect(signer.verify(downloadPath('42', 'abc.fw'), ['1'], signature)).toBe(false);
    expect(signer.verify(downloadPath('42', 'abc.fw'), '1e9', signature)).toBe(false);
    now += 61_000;
    expect(signer.verify(downloadPath('42', 'abc.fw'), expires, signature)).toBe(false);
  });

  it('depends on the key', () => {
    const other = new DownloadLinkSigner(deriveLinkKey('b'.repeat(40)), 'https://hub.example', () => now);
    const url = new URL(signer.url('1', 'u'));
    expect(
      other.verify(url.pathname, url.searchParams.get('expires'), url.searchParams.get('signature')),
    ).toBe(false);
  });
});

describe('Range header', () => {
  it.each([
    [undefined, null],
    ['bytes=0-99', { start: 0, end: 99 }],
    ['bytes=100-', { start: 100, end: 999 }],
    ['bytes=500-1000', { start: 500, end: 999 }], // device resume: end one past the last byte
    ['bytes=-10', { start: 990, end: 999 }],
    ['bytes=-5000', { start: 0, end: 999 }],
    ['BYTES = 1 - 2', { start: 1, end: 2 }],
    ['bytes=0-1,5-6', null], // several ranges may be ignored: the whole file
    ['bytes=1000-', 'unsatisfiable'],
    ['bytes=5-4', 'unsatisfiable'],
    ['bytes=-0', 'unsatisfiable'],
    ['bytes=-', 'unsatisfiable'],
    ['items=0-1', 'unsatisfiable'],
    ['bytes=abc', 'unsatisfiable'],
  ])('%s → %j', (header, expected) => {
    expect(parseRange(header, 1000)).toEqual(expected);
  });

  it('an empty file has nothing to range over', () => {
    expect(parseRange('bytes=0-', 0)).toBe('unsatisfiable');
  });
});

describe('device channel payloads', () => {
  it('maps the join keys to firmware metadata', () => {
    expect(
      metadataFromJoin({
        nerves_fw_uuid: 'ABC',
        nerves_fw_version: '1.0.0',
        nerves_fw_platform: 'rpi4',
        fwup_version: '1.10.1',
        nerves_fw_misc: 5,
        nerves_fw_application_part0_devpath: '/dev/mmcblk0p3',
      }),
    ).toEqual({
      uuid: 'abc',
      architecture: null,
      platform: 'rpi4',
      product: null,
      version: '1.0.0',
      author: null,
      description: null,
      fwup_version: '1.10.1',
      vcs_identifier: null,
      misc: null,
    });
    expect(
      metadataFromJoin({
        nerves_fw_uuid: 'abc',
        nerves_fw_description: 'a\ud800b\u0000c',
        nerves_fw_misc: 'x\udc00',
      }),
    ).toMatchObject({ description: 'a\ufffdbc', misc: 'x\ufffd' });
    expect(metadataFromJoin({ nerves_fw_version: '1.0.0' })).toBeNull();
    expect(metadataFromJoin({ nerves_fw_uuid: ' ' })).toBeNull();
  });

  it('maps an ESP-IDF join (app descriptor keys) to firmware metadata, the uuid derived as on upload', () => {
    const sha = 'AB'.repeat(32);
    const expected = {
      uuid: 'abababab-abab-abab-abab-abababababab',
      architecture: 'riscv',
      platform: 'esp32c3',
      product: 'thermostat',
      version: '1.2.3+4',
      author: null,
      description: 'ESP-IDF v5.2.1',
      fwup_version: null,
      vcs_identifier: null,
      misc: null,
    };
    const join = {
      esp_idf_project_name: 'thermostat',
      esp_idf_version: '1.2.3.4',
      esp_idf_app_elf_sha256: sha,
      esp_idf_ver: 'v5.2.1',
      esp_idf_chip_id: 5,
    };
    expect(metadataFromJoin(join)).toEqual(expected);
    expect(metadataFromJoin({ ...join, update_tool: 'esp-idf', esp_idf_chip_id: '5' })).toEqual(expected);
    expect(metadataFromJoin({ ...join, esp_idf_chip_id: 'nine' })).toMatchObject({
      platform: null,
      architecture: null,
    });
    expect(metadataFromJoin({ ...join, esp_idf_version: 'main-dirty' })).toMatchObject({
      version: 'main-dirty',
    });
    expect(metadataFromJoin({ ...join, esp_idf_app_elf_sha256: 'abc' })).toBeNull();
    expect(metadataFromJoin({ esp_idf_project_name: 'thermostat' })).toBeNull();
  });

  it('maps an AtomVM join to firmware metadata, the uuid from the packbeam hash', () => {
    expect(
      metadataFromJoin({
        atomvm_app_name: 'blinky',
        atomvm_app_version: 'v0.3',
        atomvm_avm_sha256: '0123456789abcdef'.repeat(4),
        atomvm_version: '0.6.5',
      }),
    ).toEqual({
      uuid: '01234567-89ab-cdef-0123-456789abcdef',
      architecture: 'beam',
      platform: 'atomvm',
      product: 'blinky',
      version: '0.3.0',
      author: null,
      description: 'AtomVM 0.6.5',
      fwup_version: null,
      vcs_identifier: null,
      misc: null,
    });
    expect(metadataFromJoin({ atomvm_app_name: 'blinky' })).toBeNull();
  });

  it('chooses the tool: update_tool, then the keys present, then fwup', () => {
    expect(joinUpdateTool({ update_tool: 'atomvm', nerves_fw_uuid: 'x' })).toBe('atomvm');
    expect(joinUpdateTool({ nerves_fw_uuid: 'x', esp_idf_project_name: 'p' })).toBe('fwup');
    expect(joinUpdateTool({ esp_idf_app_elf_sha256: 'ab' })).toBe('esp-idf');
    expect(joinUpdateTool({ atomvm_app_name: 'a' })).toBe('atomvm');
    expect(joinUpdateTool({ update_tool: 'dfu' })).toBe('fwup');
    expect(joinUpdateTool({})).toBe('fwup');
  });

  it('builds the update payload with upper-case checksums', () => {
    const payload = updatePayload(
      {
        firmware_id: '1',
        delivered_at: null,
        uuid: 'u',
        version: '1.0.0',
        platform: 'p',
        architecture: 'a',
        author: null,
        description: 'd',
        misc: null,
        vcs_identifier: null,
        size: '2048',
        sha256: 'ab'.repeat(32),
        chunk_sha256: ['cd'.repeat(32)],
        tool: 'fwup',
        storage_key: '5/x.fw',
        product_name: 'prod',
        deployment_group_id: null,
        delta_allowed: false,
        delta_fwup_version: null,
      },
      'https://x/fw',
    );
    expect(payload).toEqual({
      update_available: true,
      firmware_url: 'https://x/fw',
      firmware_meta: {
        architecture: 'a',
        author: null,
        description: 'd',
        misc: null,
        platform: 'p',
        product: 'prod',
        uuid: 'u',
        vcs_identifier: null,
        version: '1.0.0',
      },
      size: 2048,
      checksum: 'AB'.repeat(32),
      partials_checksums: ['CD'.repeat(32)],
      deployment_id: null,
    });
  });

  it("names an orchestrated update's deployment group in deployment_id, as NervesHub's integer id", () => {
    const row = {
      firmware_id: '1',
      delivered_at: null,
      uuid: 'u',
      version: '1.0.0',
      platform: 'p',
      architecture: 'a',
      author: null,
      description: null,
      misc: null,
      vcs_identifier: null,
      size: '1',
      sha256: 'ab'.repeat(32),
      chunk_sha256: [],
      tool: 'fwup' as const,
      storage_key: '5/x.fw',
      product_name: 'prod',
      deployment_group_id: '42',
      delta_allowed: true,
      delta_fwup_version: '1.6.0',
    };
    expect(updatePayload(row, 'https://x/fw').deployment_id).toBe(42);
  });

  it("sends a delta as NervesHub does: the target's metadata, the delta's link, size and checksums", () => {
    const row = {
      firmware_id: '1',
      delivered_at: null,
      uuid: 'u',
      version: '2.0.0',
      platform: 'p',
      architecture: 'a',
      author: null,
      description: null,
      misc: null,
      vcs_identifier: null,
      size: '9000',
      sha256: 'ab'.repeat(32),
      chunk_sha256: ['ab'.repeat(32)],
      tool: 'fwup' as const,
      storage_key: '5/x.fw',
      product_name: 'prod',
      deployment_group_id: '42',
      delta_allowed: true,
      delta_fwup_version: '1.6.0',
    };
    const payload = deltaUpdatePayload(
      row,
      {
        id: '7',
        state: 'ready',
        size: '300',
        sha256: 'ef'.repeat(32),
        chunk_sha256: ['ef'.repeat(32)],
        fwup_version: '1.6.0',
        storage_key: '5/deltas/d.fw',
        source_uuid: 's',
        target_uuid: 'u',
      },
      'https://x/delta',
    );
    expect(payload).toEqual({
      ...updatePayload(row, 'https://x/delta'),
      size: 300,
      checksum: 'EF'.repeat(32),
      partials_checksums: ['EF'.repeat(32)],
    });
    expect(payload.firmware_meta).toEqual(expect.objectContaining({ uuid: 'u', version: '2.0.0' }));
  });

  it('normalises update statuses', () => {
    expect(normaliseStatus('Received')).toBe('received');
    expect(normaliseStatus('FWUP error: bad')).toBe('failed');
    expect(normaliseStatus(5)).toBeNull();
    expect(normaliseStatus('')).toBeNull();
    expect(normaliseStatus('x'.repeat(100))).toHaveLength(64);
  });
});

describe('device bus envelopes', () => {
  it('round-trips and rejects what is not an envelope', () => {
    const envelope = { from: 'i', deviceId: '1', message: { kind: 'update' as const } };
    expect(decodeEnvelope(encodeEnvelope(envelope))).toEqual(envelope);
    expect(decodeEnvelope('nope')).toBeNull();
    expect(decodeEnvelope('{"from":"i","deviceId":1,"message":{"kind":"update"}}')).toBeNull();
    expect(decodeEnvelope('{"from":"i","deviceId":"1","message":null}')).toBeNull();
  });

  it('refuses payloads over the NOTIFY limit', () => {
    expect(() =>
      encodeEnvelope({
        from: 'i',
        deviceId: '1',
        message: { kind: 'console', to: 'j', request: 'r', part: 0, parts: 1, data: 'x'.repeat(8000) },
      }),
    ).toThrow(/too large/);
  });

  it('a console chunk of 1000 code points of the worst kind stays under the limit', () => {
    expect(() =>
      encodeEnvelope({
        from: 'f'.repeat(36),
        deviceId: '9'.repeat(19),
        message: {
          kind: 'console',
          to: 't'.repeat(36),
          request: 'r'.repeat(36),
          part: 9999,
          parts: 9999,
          data: '\u0001'.repeat(1000),
        },
      }),
    ).not.toThrow();
  });
});

describe('device bus: closes', () => {
  it('a full `closes` message of the longest device ids stays under the NOTIFY limit', () => {
    expect(() =>
      encodeEnvelope({
        from: 'f'.repeat(36),
        deviceId: '',
        message: {
          kind: 'closes',
          devices: Array.from({ length: CLOSES_PER_MESSAGE }, () => '9'.repeat(19)),
        },
      }),
    ).not.toThrow();
  });
});

describe('simulator helpers', () => {
  it('builds the device socket URL', () => {
    expect(deviceSocketUrl('http://h:4000')).toBe('ws://h:4000/device-socket/websocket?vsn=2.0.0');
    expect(deviceSocketUrl('https://h')).toBe('wss://h/device-socket/websocket?vsn=2.0.0');
    expect(deviceSocketUrl('ws://h/socket/websocket')).toBe('ws://h/socket/websocket?vsn=2.0.0');
  });

  it('gives each device a stable iroh endpoint id', () => {
    expect(simulatedIrohKey('a')).toMatch(/^[0-9a-f]{64}$/);
    expect(simulatedIrohKey('a')).toBe(simulatedIrohKey('a'));
    expect(simulatedIrohKey('a')).not.toBe(simulatedIrohKey('b'));
  });
});
