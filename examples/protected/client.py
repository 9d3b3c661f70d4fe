"""A service calling the protected server with the client credentials grant: on the first 401
the client finds the authorization server, gets a token and tries again. The secret is sent
only to the issuer named here.

    SVC_SECRET=s3cret python examples/protected/client.py SERVER_URL ISSUER
"""

import os
import sys

import trio

import mcpfast
from mcpfast.client import oauth


async def main(url: str, issuer: str) -> None:
    client = oauth.ClientCredentials("svc", client_secret=os.environ["SVC_SECRET"], issuer=issuer)
    auth = oauth.OAuth(client=client, grant=oauth.ClientCredentialsGrant())
    async with mcpfast.connect(url, auth=auth) as session:
        result = await session.call_tool("save", {"path": "notes.txt"})
        print(result.content[0].text)


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2])
