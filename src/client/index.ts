/**
 * `memorypool/client`: the client package (packages/client, published as `memorypool-client`)
 * under this package's name, so an application that installed the server imports the client
 * without a second name. One source: nothing here but the re-export.
 */
export * from 'memorypool-client';
