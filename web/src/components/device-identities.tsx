import { useEffect, useState } from 'preact/hooks';
import { api } from '../api/client';
import type { components } from '../api/schema';

type Identity = components['schemas']['NetworkIdentityView'];
type Certificate = components['schemas']['DeviceCertificateView'];

const day = (timestamp: string | null) =>
  timestamp === null ? '—' : new Date(timestamp).toLocaleDateString();

/** The device's network identities (iroh, NetBird, Tailscale, WireGuard) and its client certificates. */
export function DeviceIdentities(props: { org: string; product: string; identifier: string }) {
  const { org, product, identifier } = props;
  const [identities, setIdentities] = useState<Identity[] | null>(null);
  const [certificates, setCertificates] = useState<Certificate[] | null>(null);

  useEffect(() => {
    let newest = true;
    const path = { org_name: org, product_name: product, identifier };
    void Promise.all([
      api.GET('/api/orgs/{org_name}/products/{product_name}/devices/{identifier}/network_identities', {
        params: { path },
      }),
      api.GET('/api/orgs/{org_name}/products/{product_name}/devices/{identifier}/certificates', {
        params: { path },
      }),
    ]).then(([ids, certs]) => {
      if (!newest) return;
      setIdentities(ids.data?.data ?? []);
      setCertificates(certs.data?.data ?? []);
    });
    return () => {
      newest = false;
    };
  }, [org, product, identifier]);

  return (
    <>
      <section aria-labelledby="identities-heading">
        <h2 id="identities-heading">Network identities</h2>
        {identities !== null && identities.length === 0 && <p class="hint">None reported.</p>}
        {identities !== null && identities.length > 0 && (
          <table>
            <caption class="visually-hidden">Network identities of {identifier}</caption>
            <thead>
              <tr>
                <th scope="col">Service</th>
                <th scope="col">Instance</th>
                <th scope="col">Identifier</th>
                <th scope="col">Last reported</th>
              </tr>
            </thead>
            <tbody>
              {identities.map((identity) => (
                <tr key={`${identity.service}-${identity.instance}-${identity.identifier}`}>
                  <td>{identity.service}</td>
                  <td>{identity.instance}</td>
                  <td class="mono wrap">{identity.identifier}</td>
                  <td>{day(identity.last_reported_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <section aria-labelledby="certificates-heading">
        <h2 id="certificates-heading">Certificates</h2>
        {certificates !== null && certificates.length === 0 && (
          <p class="hint">No client certificate registered.</p>
        )}
        {certificates !== null && certificates.length > 0 && (
          <table>
            <caption class="visually-hidden">Certificates of {identifier}</caption>
            <thead>
              <tr>
                <th scope="col">Serial</th>
                <th scope="col">Valid</th>
                <th scope="col">SHA-256 fingerprint</th>
                <th scope="col">Last used</th>
              </tr>
            </thead>
            <tbody>
              {certificates.map((certificate) => (
                <tr key={certificate.serial}>
                  <td class="mono">{certificate.serial}</td>
                  <td>
                    {day(certificate.not_before)} to {day(certificate.not_after)}
                  </td>
                  <td class="mono wrap">{certificate.fingerprint}</td>
                  <td>{day(certificate.last_used)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}
