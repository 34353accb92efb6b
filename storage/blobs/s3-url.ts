/**
 * `S3_URL`: `http(s)://ACCESS_KEY:SECRET_KEY@host:port/bucket`, optionally followed by a key
 * prefix (`/bucket/some/prefix`) and `?region=...` (default `us-east-1`, which also spares the
 * client a bucket-location lookup). Keys and secrets are percent-encoded like any URL userinfo.
 */

export interface S3Location {
  endPoint: string;
  port: number;
  useSSL: boolean;
  accessKey: string;
  secretKey: string;
  bucket: string;
  /** Prepended to every key: empty, or ends with `/`. */
  prefix: string;
  region: string;
}

const SHAPE = 'S3_URL must look like http(s)://ACCESS_KEY:SECRET_KEY@host:port/bucket';

/** Parses `S3_URL`; a malformed one throws an error that never repeats the URL (it holds a secret). */
export function parseS3Url(s3Url: string): S3Location {
  let url: URL;
  try {
    url = new URL(s3Url);
  } catch {
    throw new Error(`${SHAPE}; it is not a URL.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error(`${SHAPE}; the scheme must be http or https.`);
  if (!url.username || !url.password)
    throw new Error(`${SHAPE}; the access key and the secret key are missing.`);
  const [bucket, ...prefix] = url.pathname.split('/').filter((segment) => segment !== '');
  if (!bucket) throw new Error(`${SHAPE}; the bucket is missing.`);
  const useSSL = url.protocol === 'https:';
  return {
    endPoint: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port ? Number(url.port) : useSSL ? 443 : 80,
    useSSL,
    accessKey: decodeURIComponent(url.username),
    secretKey: decodeURIComponent(url.password),
    bucket: decodeURIComponent(bucket),
    prefix: prefix.map((segment) => decodeURIComponent(segment) + '/').join(''),
    region: url.searchParams.get('region') ?? 'us-east-1',
  };
}
