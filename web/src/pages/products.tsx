import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { components } from '../api/schema';
import { ErrorAlert } from '../components/alert';
import { Link } from '../components/link';
import { navigate, seg } from '../router';
import { allows, type Role } from '../session';

type Product = components['schemas']['ProductView'];

/** The organization's products; a manage member may create one. */
export function Products({ org, role }: { org: string; role: Role | undefined }) {
  const [products, setProducts] = useState<Product[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [name, setName] = useState('');
  const [createError, setCreateError] = useState<string | null>(null);

  useEffect(() => {
    setProducts(null);
    setError(null);
    let newest = true;
    void api
      .GET('/api/orgs/{org_name}/products', { params: { path: { org_name: org } } })
      .then(({ data, error: failure, response }) => {
        if (!newest) return;
        if (data) setProducts(data.data);
        else setError(errorText(failure, response.status));
      });
    return () => {
      newest = false;
    };
  }, [org]);

  const create = async (event: Event) => {
    event.preventDefault();
    setCreateError(null);
    const {
      data,
      error: failure,
      response,
    } = await api.POST('/api/orgs/{org_name}/products', {
      params: { path: { org_name: org } },
      body: { product: { name } },
    });
    if (!data) {
      setCreateError(errorText(failure, response.status));
      return;
    }
    navigate(`/orgs/${seg(org)}/products/${seg(data.data.name)}/settings`);
  };

  return (
    <>
      <h1>Products</h1>
      <ErrorAlert message={error} />
      {products === null && error === null && <p>Loading…</p>}
      {products !== null && products.length === 0 && <p>This organization has no products yet.</p>}
      {products !== null && products.length > 0 && (
        <table>
          <caption class="visually-hidden">Products of {org}</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Update tools</th>
              <th scope="col">Unique versions</th>
              <th scope="col">Unsigned AtomVM</th>
              <th scope="col">Unsigned ESP-IDF</th>
            </tr>
          </thead>
          <tbody>
            {products.map((product) => (
              <tr key={product.name}>
                <th scope="row">
                  <Link href={`/orgs/${seg(org)}/products/${seg(product.name)}`}>{product.name}</Link>
                </th>
                <td>{product.allowed_update_tools.join(', ') || 'none'}</td>
                <td>{yesNo(product.require_unique_firmware_version)}</td>
                <td>{yesNo(product.allow_unsigned_atomvm_firmware)}</td>
                <td>{yesNo(product.allow_unsigned_esp_idf_firmware)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {allows(role, 'manage') && (
        <form class="inline" onSubmit={(event) => void create(event)}>
          <h2>New product</h2>
          <label for="product-name">Name</label>
          <input
            id="product-name"
            required
            maxLength={255}
            value={name}
            onInput={(event) => setName(event.currentTarget.value)}
          />
          <button type="submit">Create product</button>
          <ErrorAlert message={createError} />
        </form>
      )}
    </>
  );
}

export const yesNo = (value: boolean) => (value ? 'yes' : 'no');
