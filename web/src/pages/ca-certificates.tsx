import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { components } from '../api/schema';
import { ActionsHeader } from '../components/actions-header';
import { ErrorAlert, Status } from '../components/alert';
import { allows, type Role } from '../session';

type CaCertificate = components['schemas']['CaCertificateView'];

/** The registration form's fields as the API names them in its 422s, in the form's words. */
const FIELD_LABELS: Record<string, string> = {
  cert: 'CA certificate',
  verification_cert: 'Verification certificate',
  serial: 'A CA certificate with this serial number',
  description: 'Description',
  'jitp.product_name': 'JITP product',
  'jitp.tags': 'JITP tags',
  'jitp.description': 'JITP device description',
};

const DAY_MS = 86_400_000;
const day = (timestamp: string) => new Date(timestamp).toLocaleDateString();

/** "valid", "expires in N days" (within 30), "expired", "not valid yet". */
function validity(cert: CaCertificate, now = Date.now()): string {
  const from = Date.parse(cert.not_before);
  const until = Date.parse(cert.not_after);
  if (now < from) return 'not valid yet';
  if (now > until) return 'expired';
  const days = Math.floor((until - now) / DAY_MS);
  return days <= 30 ? `expires in ${days} day${days === 1 ? '' : 's'}` : 'valid';
}

/** The openssl commands of step 2, with the token in the verification certificate's URI subject alternative name. */
function commands(token: string): { ca: string; verification: string } {
  return {
    ca: [
      'openssl ecparam -name prime256v1 -genkey -noout -out ca.key',
      'openssl req -new -x509 -key ca.key -sha256 -days 3650 -out ca.pem \\',
      '  -subj "/CN=My device CA" \\',
      '  -addext "basicConstraints=critical,CA:TRUE" \\',
      '  -addext "keyUsage=critical,keyCertSign,cRLSign" \\',
      '  -addext "subjectKeyIdentifier=hash"',
    ].join('\n'),
    verification: [
      'openssl ecparam -name prime256v1 -genkey -noout -out verification.key',
      'openssl req -new -key verification.key -out verification.csr \\',
      '  -subj "/CN=fleethub verification" \\',
      `  -addext "subjectAltName=URI:urn:nerveshub:verify:${token}"`,
      'openssl x509 -req -in verification.csr -CA ca.pem -CAkey ca.key -CAcreateserial \\',
      '  -days 1 -sha256 -copy_extensions copy -out verification.pem',
    ].join('\n'),
  };
}

/** A certificate field: pasted PEM, or read from a chosen file into the same text area. */
function CertificateField(props: {
  id: string;
  label: string;
  hint: string;
  value: string;
  onChange: (value: string) => void;
}) {
  const [fileError, setFileError] = useState<string | null>(null);
  return (
    <div class="cert-field">
      <label for={props.id}>{props.label}</label>
      <p class="hint" id={`${props.id}-hint`}>
        {props.hint}
      </p>
      <textarea
        id={props.id}
        class="mono"
        rows={6}
        cols={66}
        required
        spellcheck={false}
        aria-describedby={`${props.id}-hint`}
        placeholder="-----BEGIN CERTIFICATE-----"
        value={props.value}
        onInput={(event) => props.onChange(event.currentTarget.value)}
      />
      <label for={`${props.id}-file`}>Or choose the file of the {props.label.toLowerCase()}</label>
      <input
        id={`${props.id}-file`}
        type="file"
        accept=".pem,.crt,.cer"
        onChange={(event) => {
          const file = event.currentTarget.files?.[0];
          if (!file) return;
          setFileError(null);
          file.text().then(
            (text) => props.onChange(text.trim()),
            () => setFileError(`The file ${file.name} could not be read.`),
          );
        }}
      />
      <ErrorAlert message={fileError} />
    </div>
  );
}

/**
 * The organization's CA certificates: devices whose certificates one of them signed authenticate with them (and,
 * with JITP, are created on their first connection). A manage member registers one in three guided steps (the
 * proof of possession of its key) and deletes them.
 */
export function CaCertificates({ org, role }: { org: string; role: Role | undefined }) {
  const canManage = allows(role, 'manage');
  const path = { org_name: org };
  const [certs, setCerts] = useState<CaCertificate[] | null>(null);
  const [products, setProducts] = useState<string[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [token, setToken] = useState<string | null>(null);
  const [tokenError, setTokenError] = useState<string | null>(null);
  const [caPem, setCaPem] = useState('');
  const [verificationPem, setVerificationPem] = useState('');
  const [description, setDescription] = useState('');
  const [jitp, setJitp] = useState(false);
  const [jitpProduct, setJitpProduct] = useState('');
  const [jitpTags, setJitpTags] = useState('');
  const [jitpDescription, setJitpDescription] = useState('');
  const [registerError, setRegisterError] = useState<string | null>(null);

  const load = async () => {
    const {
      data,
      error: failure,
      response,
    } = await api.GET('/api/orgs/{org_name}/ca_certificates', { params: { path } });
    if (data) setCerts(data.data);
    else setError(errorText(failure, response.status));
  };
  useEffect(() => {
    setCerts(null);
    setToken(null);
    setError(null);
    void load();
    if (canManage) {
      void api.GET('/api/orgs/{org_name}/products', { params: { path } }).then(({ data }) => {
        if (data) setProducts(data.data.map((p) => p.name));
      });
    }
  }, [org, canManage]);

  const getToken = async () => {
    setTokenError(null);
    const {
      data,
      error: failure,
      response,
    } = await api.GET('/api/orgs/{org_name}/ca_certificates/verification_token', { params: { path } });
    if (data) setToken(data.data.verification_token);
    else setTokenError(errorText(failure, response.status));
  };

  const register = async (event: Event) => {
    event.preventDefault();
    setRegisterError(null);
    setStatus(null);
    const {
      data,
      error: failure,
      response,
    } = await api.POST('/api/orgs/{org_name}/ca_certificates', {
      params: { path },
      body: {
        cert: caPem.trim(),
        verification_cert: verificationPem.trim(),
        description: description.trim() || null,
        jitp: jitp
          ? {
              product_name: jitpProduct,
              tags: jitpTags
                .split(',')
                .map((tag) => tag.trim())
                .filter((tag) => tag !== ''),
              description: jitpDescription.trim() || null,
            }
          : null,
      },
    });
    if (!data) {
      setRegisterError(errorText(failure, response.status, FIELD_LABELS));
      return;
    }
    setStatus(`CA certificate ${data.data.serial} registered.`);
    setCaPem('');
    setVerificationPem('');
    setDescription('');
    setJitp(false);
    setToken(null);
    await load();
  };

  const remove = async (cert: CaCertificate) => {
    const named = cert.description ? `${cert.description} (serial ${cert.serial})` : `serial ${cert.serial}`;
    if (
      !window.confirm(
        `Delete the CA certificate ${named}? Devices it signed can no longer authenticate with it.`,
      )
    )
      return;
    setStatus(null);
    const { error: failure, response } = await api.DELETE('/api/orgs/{org_name}/ca_certificates/{serial}', {
      params: { path: { ...path, serial: cert.serial } },
    });
    if (!response.ok) {
      setError(errorText(failure, response.status));
      return;
    }
    setError(null);
    setStatus(`CA certificate ${cert.serial} deleted.`);
    await load();
  };

  const steps = token === null ? null : commands(token);
  return (
    <>
      <h1>CA certificates</h1>
      <p class="hint">
        Devices whose certificates one of these CAs signed can connect with them. With just-in-time
        provisioning (JITP), such a device is created in a product the first time it connects.
      </p>
      <ErrorAlert message={error} />
      <Status message={status} />
      {certs === null && error === null && <p>Loading…</p>}
      {certs !== null && certs.length === 0 && <p>No CA certificate registered yet.</p>}
      {certs !== null && certs.length > 0 && (
        <table>
          <caption class="visually-hidden">CA certificates of {org}</caption>
          <thead>
            <tr>
              <th scope="col">Serial</th>
              <th scope="col">Description</th>
              <th scope="col">Valid from</th>
              <th scope="col">Valid until</th>
              <th scope="col">Status</th>
              <th scope="col">JITP</th>
              {canManage && <ActionsHeader />}
            </tr>
          </thead>
          <tbody>
            {certs.map((cert) => (
              <tr key={cert.serial}>
                <th scope="row" class="mono serial">
                  {cert.serial}
                </th>
                <td>{cert.description ?? '—'}</td>
                <td>{day(cert.not_before)}</td>
                <td>{day(cert.not_after)}</td>
                <td>{validity(cert)}</td>
                <td>
                  {cert.jitp === null
                    ? 'no'
                    : `into ${cert.jitp.product_name}${cert.jitp.tags.length > 0 ? `, tagged ${cert.jitp.tags.join(', ')}` : ''}`}
                </td>
                {canManage && (
                  <td>
                    <button
                      type="button"
                      class="danger"
                      aria-label={`Delete CA certificate ${cert.serial}`}
                      onClick={() => void remove(cert)}
                    >
                      Delete
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {canManage && (
        <section aria-labelledby="register-heading" class="register">
          <h2 id="register-heading">Register a CA certificate</h2>
          <p class="hint">
            fleethub needs proof that you hold the CA's private key: a short-lived certificate, signed by the
            CA, that carries a token only this organization gets.
          </p>
          <ol class="steps">
            <li>
              <h3>Get a verification token</h3>
              <p>It is valid for one hour, for {org} only.</p>
              <button type="button" onClick={() => void getToken()}>
                {token === null ? 'Get a verification token' : 'Get a new token'}
              </button>
              <ErrorAlert message={tokenError} />
              {token !== null && (
                <p>
                  <label for="verification-token">Verification token</label>
                  <input id="verification-token" class="mono wide" readOnly value={token} />
                </p>
              )}
            </li>
            <li>
              <h3>Make the verification certificate</h3>
              {steps === null ? (
                <p>The commands appear here once you have a token.</p>
              ) : (
                <>
                  <p>
                    With the CA's key (<code>ca.key</code>) and certificate (<code>ca.pem</code>), sign a
                    certificate whose subject alternative name is the token:
                  </p>
                  <pre class="output" aria-label="Commands that make the verification certificate">
                    <code>{steps.verification}</code>
                  </pre>
                  <details>
                    <summary>No CA yet? Make one first</summary>
                    <pre class="output" aria-label="Commands that make a CA">
                      <code>{steps.ca}</code>
                    </pre>
                  </details>
                </>
              )}
            </li>
            <li>
              <h3>Send both certificates</h3>
              <form onSubmit={(event) => void register(event)} aria-label="Register a CA certificate">
                <CertificateField
                  id="ca-cert"
                  label="CA certificate"
                  hint="ca.pem: the CA certificate (PEM), with a subject key identifier."
                  value={caPem}
                  onChange={setCaPem}
                />
                <CertificateField
                  id="verification-cert"
                  label="Verification certificate"
                  hint="verification.pem: the certificate of step 2, signed by the CA."
                  value={verificationPem}
                  onChange={setVerificationPem}
                />
                <div class="cert-field">
                  <label for="ca-description">Description (optional)</label>
                  <input
                    id="ca-description"
                    maxLength={255}
                    value={description}
                    onInput={(event) => setDescription(event.currentTarget.value)}
                  />
                </div>
                <label class="check">
                  <input
                    type="checkbox"
                    checked={jitp}
                    onChange={(event) => setJitp(event.currentTarget.checked)}
                  />
                  Create devices on their first connection (JITP)
                </label>
                {jitp && (
                  <fieldset>
                    <legend>Just-in-time provisioning</legend>
                    <label for="jitp-product">Product</label>
                    <select
                      id="jitp-product"
                      required
                      value={jitpProduct}
                      onChange={(event) => setJitpProduct(event.currentTarget.value)}
                    >
                      <option value="">Choose a product</option>
                      {products.map((name) => (
                        <option key={name} value={name}>
                          {name}
                        </option>
                      ))}
                    </select>
                    <label for="jitp-tags">Tags of the new devices (comma-separated, optional)</label>
                    <input
                      id="jitp-tags"
                      value={jitpTags}
                      onInput={(event) => setJitpTags(event.currentTarget.value)}
                    />
                    <label for="jitp-description">Description of the new devices (optional)</label>
                    <input
                      id="jitp-description"
                      maxLength={255}
                      value={jitpDescription}
                      onInput={(event) => setJitpDescription(event.currentTarget.value)}
                    />
                  </fieldset>
                )}
                <ErrorAlert message={registerError} />
                <button type="submit">Register CA certificate</button>
              </form>
            </li>
          </ol>
        </section>
      )}
    </>
  );
}
