from michi.serve.client import main

raise SystemExit(main())
