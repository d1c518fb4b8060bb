import { useEffect, useRef, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { ConsoleTerminal } from '../lazy/terminal';
import { type LiveStream, useLiveEvent } from '../live';

/**
 * The device's console in a terminal (xterm.js, loaded with this part of the page only): its output as it comes
 * (`device.console` events), and for a manage member a line typed and sent with Enter (`POST .../code`).
 */
export function DeviceConsole(props: {
  org: string;
  product: string;
  identifier: string;
  live: LiveStream | null;
  canType: boolean;
}) {
  const { org, product, identifier, canType } = props;
  const host = useRef<HTMLDivElement>(null);
  const [terminal, setTerminal] = useState<ConsoleTerminal | null>(null);
  const [failure, setFailure] = useState<string | null>(null);

  useEffect(() => {
    let disposed = false;
    let opened: ConsoleTerminal | null = null;
    // Lines go one after the other, in the order they were typed.
    let sending: Promise<void> = Promise.resolve();
    const send = (line: string) => {
      if (line.trim() === '') return;
      sending = sending.then(async () => {
        const { error, response } = await api.POST(
          '/api/orgs/{org_name}/products/{product_name}/devices/{identifier}/code',
          { params: { path: { org_name: org, product_name: product, identifier } }, body: { code: line } },
        );
        if (!response.ok) opened?.note(errorText(error, response.status).replace(/\.$/, ''));
      });
    };
    import('../lazy/terminal').then(
      ({ openTerminal }) => {
        if (disposed || !host.current) return;
        opened = openTerminal(host.current, {
          label: `Console of ${identifier}`,
          onLine: canType ? send : undefined,
        });
        opened.note(`console of ${identifier}: output appears as the device prints it`);
        setTerminal(opened);
      },
      () => setFailure('The terminal could not be loaded; reload the page to try again.'),
    );
    return () => {
      disposed = true;
      opened?.dispose();
      setTerminal(null);
    };
  }, [org, product, identifier, canType]);

  useLiveEvent(props.live, 'device.console', (output) => {
    if (output.identifier === identifier) terminal?.write(output.data);
  });
  useLiveEvent(props.live, 'stream.skipped', (skipped) =>
    terminal?.note(`${skipped.lines} line(s) of output or logs skipped: the page fell behind`),
  );

  return (
    <section aria-labelledby="console-heading">
      <h2 id="console-heading">Console</h2>
      <p class="hint">
        {canType
          ? 'Type a line and press Enter to send it to the device’s console (IEx). Tab leaves the terminal.'
          : 'Output of the device’s console. Typing into it needs the manage role.'}
      </p>
      {failure !== null && (
        <p class="alert" role="alert">
          {failure}
        </p>
      )}
      <div class="console-terminal" ref={host} />
    </section>
  );
}
