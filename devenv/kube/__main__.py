from devenv.kube.server import main

raise SystemExit(main())
