// A real authorization server for the interop tests: `oidc-provider` (OpenID certified)
// on 127.0.0.1, issuing JWT access tokens for the MCP resources it is told of.
//
//   node oidc_provider.mjs PACKAGE_DIR PORT RESOURCE [RESOURCE ...]
//
// PACKAGE_DIR is where npm installed oidc-provider. Users sign in and consent at once
// (the user is "alice"): the interaction routes below finish every interaction, so a
// test's redirect handler only follows redirects. Clients: "machine" (client_secret,
// client_credentials), "sdk-app" and dynamic registration (public, authorization code
// with PKCE). It prints "listening PORT" once it serves.
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const [packageDir, portText, ...resources] = process.argv.slice(2);
const port = Number(portText);
const { default: Provider } = await import(
  pathToFileURL(path.join(packageDir, 'lib', 'index.js')).href
);
const issuer = `http://127.0.0.1:${port}`;
const REDIRECT = 'http://127.0.0.1:5555/callback';

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'machine',
      client_secret: 'machine-secret',
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
    },
    {
      client_id: 'sdk-app',
      token_endpoint_auth_method: 'none',
      application_type: 'native',
      grant_types: ['authorization_code', 'refresh_token'],
      redirect_uris: [REDIRECT],
      response_types: ['code'],
    },
  ],
  scopes: ['openid', 'offline_access', 'mcp', 'admin'],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resources[0],
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource) => {
        if (!resources.includes(resource)) {
          throw new Error(`unknown resource ${resource}`);
        }
        return {
          scope: 'mcp admin',
          audience: resource,
          accessTokenTTL: 300,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  pkce: { required: () => true },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
});
// Loopback over plain HTTP: the tests run on 127.0.0.1 only.
provider.proxy = false;

// Every interaction ends at once: alice signs in, and grants what the client asked.
provider.use(async (ctx, next) => {
  const match = /^\/interaction\/([^/]+)$/.exec(ctx.path);
  if (match === null) {
    await next();
    return;
  }
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  const { prompt, params } = details;
  let result;
  if (prompt.name === 'login') {
    result = { login: { accountId: 'alice' } };
  } else {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: details.session.accountId, clientId: params.client_id });
    // Grant exactly what the provider found missing (scopes, and resource scopes).
    const { missingOIDCScope = [], missingResourceScopes = {} } = prompt.details;
    if (missingOIDCScope.length) {
      grant.addOIDCScope(missingOIDCScope.join(' '));
    }
    for (const [resource, scopes] of Object.entries(missingResourceScopes)) {
      grant.addResourceScope(resource, scopes.join(' '));
    }
    result = { consent: { grantId: await grant.save() } };
  }
  await provider.interactionFinished(ctx.req, ctx.res, result, { mergeWithLastSubmission: true });
});

provider.listen(port, '127.0.0.1', () => {
  console.log(`listening ${port}`);
});
