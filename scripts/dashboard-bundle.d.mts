// Types of dashboard-bundle.mjs for the TypeScript tests that import it.
export declare const DASHBOARD_WEB: string;
export declare function packagedIndexHtml(source: string): string;
export declare function writeDashboard(outdir: string): Promise<void>;
