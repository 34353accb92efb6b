/**
 * The content type a file is served with, from its name; unknown kinds are plain bytes. HTML
 * and SVG are served as text, never as a page a browser would run.
 */
export function contentTypeOf(path: string): string {
  const extension = /\.([a-z0-9]+)$/i.exec(path)?.[1]?.toLowerCase();
  switch (extension) {
    case 'md':
      return 'text/markdown; charset=utf-8';
    case 'txt':
    case 'csv':
    case 'yaml':
    case 'yml':
    case 'html':
    case 'htm':
    case 'svg':
      return 'text/plain; charset=utf-8';
    case 'json':
      return 'application/json';
    case 'png':
      return 'image/png';
    case 'jpg':
    case 'jpeg':
      return 'image/jpeg';
    case 'gif':
      return 'image/gif';
    case 'pdf':
      return 'application/pdf';
    default:
      return 'application/octet-stream';
  }
}
