/**
 * A firmware file received in full (by the controller's upload receiver, or the CLI demo): a temporary file of the
 * store, which FirmwareService.ingest consumes (adopts into storage or removes).
 */
export interface ReceivedFile {
  path: string;
  size: number;
  /** Lower-case hex SHA-256 of the whole file and of each 1 MiB chunk. */
  sha256: string;
  chunkSha256: string[];
}
