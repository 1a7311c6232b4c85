"""Model hubs, one domain: the client (:mod:`recipes.hub.client`: listings, configs, URLs, tokens through the hubs' own
clients), yichui's resumable, verified downloader (:mod:`recipes.hub.downloader`), and the local hub server that
answers as the Hugging Face Hub and ModelScope do, faults and modes included (:mod:`recipes.hub.server`: the demo's
hub and the tests')."""
