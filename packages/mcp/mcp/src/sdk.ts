/** The MCP SDK parts dsh uses, loaded on first use: importing them costs start-up time even when no server is configured. */
export async function loadSdk() {
  const [client, stdio, types] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ])
  return {
    Client: client.Client,
    StdioClientTransport: stdio.StdioClientTransport,
    DEFAULT_INHERITED_ENV_VARS: stdio.DEFAULT_INHERITED_ENV_VARS,
    ErrorCode: types.ErrorCode,
    McpError: types.McpError,
    ToolSchema: types.ToolSchema,
    ToolListChangedNotificationSchema: types.ToolListChangedNotificationSchema,
  }
}

export type Sdk = Awaited<ReturnType<typeof loadSdk>>
