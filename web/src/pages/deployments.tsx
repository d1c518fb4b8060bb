import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { components } from '../api/schema';
import { ErrorAlert } from '../components/alert';
import { Link } from '../components/link';
import { ProductNav } from '../components/product-nav';
import { liveText, useProductEvents } from '../live-events';
import { seg } from '../router';
import { allows, type Role } from '../session';

export type DeploymentGroup = components['schemas']['DeploymentGroupView'];

/** Where a product's deployment pages are. */
export const deploymentPaths = (org: string, product: string) => {
  const base = `/orgs/${seg(org)}/products/${seg(product)}`;
  return {
    list: `${base}/deployments`,
    create: `${base}/new-deployment`,
    group: (name: string) => `${base}/deployments/${seg(name)}`,
    edit: (name: string) => `${base}/deployments/${seg(name)}/edit`,
  };
};

/** "On", "Off", or "Paused by fleethub" when the group paused itself. */
export function stateText(group: DeploymentGroup): string {
  if (group.is_active) return 'On';
  return group.paused_reason ? 'Paused by fleethub' : 'Off';
}

/** The product's deployment groups with their release and live counts; a manage member may create one. */
export function Deployments({
  org,
  product,
  role,
}: {
  org: string;
  product: string;
  role: Role | undefined;
}) {
  const paths = deploymentPaths(org, product);
  const [groups, setGroups] = useState<DeploymentGroup[] | null>(null);
  const [error, setError] = useState<string | null>(null);

  const load = async (isNewest: () => boolean = () => true) => {
    const {
      data,
      error: failure,
      response,
    } = await api.GET('/api/orgs/{org_name}/products/{product_name}/deployments', {
      params: { path: { org_name: org, product_name: product } },
    });
    if (!isNewest()) return;
    if (data) setGroups(data.data);
    else setError(errorText(failure, response.status));
  };
  useEffect(() => {
    setGroups(null);
    setError(null);
    let newest = true;
    void load(() => newest);
    return () => {
      newest = false;
    };
  }, [org, product]);

  const live = useProductEvents(org, product, {
    counts: ({ name, counts }) =>
      setGroups((shown) =>
        shown === null
          ? shown
          : shown.map((group) =>
              group.name === name ? { ...group, counts, device_count: counts.devices } : group,
            ),
      ),
    opened: () => void load(),
  });

  return (
    <>
      <h1>{product}</h1>
      <ProductNav org={org} product={product} current="deployments" />
      <h2>Deployment groups</h2>
      <ErrorAlert message={error} />
      <p class="hint" role="status">
        {liveText(live)}
      </p>
      {allows(role, 'manage') && (
        <p>
          <Link href={paths.create} class="button">
            New deployment group
          </Link>
        </p>
      )}
      {groups === null && error === null && <p>Loading…</p>}
      {groups !== null && groups.length === 0 && <p>This product has no deployment groups yet.</p>}
      {groups !== null && groups.length > 0 && (
        <table class="groups">
          <caption class="visually-hidden">Deployment groups of {product}</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Firmware</th>
              <th scope="col">State</th>
              <th scope="col" class="number">
                Devices
              </th>
              <th scope="col" class="number">
                Updating
              </th>
              <th scope="col" class="number">
                Updated
              </th>
              <th scope="col" class="number">
                Failed
              </th>
              <th scope="col" class="number">
                Penalty box
              </th>
            </tr>
          </thead>
          <tbody>
            {groups.map((group) => (
              <tr key={group.name}>
                <th scope="row">
                  <Link href={paths.group(group.name)}>{group.name}</Link>
                </th>
                <td>
                  {group.current_release.firmware.version}
                  <span class="hint"> (release {group.current_release.number})</span>
                </td>
                <td>
                  <span class={`state ${group.is_active ? 'on' : 'off'}`}>{stateText(group)}</span>
                </td>
                <td class="number">{group.counts.devices.toLocaleString()}</td>
                <td class="number">{group.counts.updating.toLocaleString()}</td>
                <td class="number">{group.counts.updated.toLocaleString()}</td>
                <td class="number">{group.counts.failed.toLocaleString()}</td>
                <td class="number">{group.counts.blocked.toLocaleString()}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
