/** A firmware uuid from the first 16 bytes of a digest: lower-case 8-4-4-4-12 hex in byte order. */
export function uuidFromDigest(digest: Uint8Array): string {
  const hex = Buffer.from(digest.subarray(0, 16)).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
